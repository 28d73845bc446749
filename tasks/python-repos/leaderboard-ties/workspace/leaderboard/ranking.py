def ranked(players):
    """Best score first; equal scores in alphabetical order of name."""
    return sorted(players, key=lambda p: (p.score, p.name), reverse=True)


def with_places(players):
    """(place, player) pairs; equal scores share a place (1, 2, 2, 4)."""
    places = []
    for index, player in enumerate(players):
        if index and player.score == players[index - 1].score:
            places.append((places[-1][0], player))
        else:
            places.append((index + 1, player))
    return places
