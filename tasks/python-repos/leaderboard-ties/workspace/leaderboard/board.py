from .players import Player
from .ranking import ranked, with_places


class Board:
    def __init__(self):
        self._scores = {}

    def record(self, name, points):
        self._scores[name] = self._scores.get(name, 0) + points

    def top(self, n):
        players = ranked([Player(name, score) for name, score in self._scores.items()])
        return [f"{place}. {player.name} {player.score}" for place, player in with_places(players)[:n]]
