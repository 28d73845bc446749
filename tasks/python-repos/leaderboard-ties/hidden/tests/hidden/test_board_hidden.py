from leaderboard import Board
from leaderboard.players import Player
from leaderboard.ranking import ranked


def test_ties_alphabetical():
    board = Board()
    for name, points in [("cy", 4), ("al", 4), ("bo", 7), ("di", 4)]:
        board.record(name, points)
    assert board.top(4) == ["1. bo 7", "2. al 4", "2. cy 4", "2. di 4"]


def test_ranked_directly():
    names = [p.name for p in ranked([Player("b", 1), Player("a", 1), Player("c", 2)])]
    assert names == ["c", "a", "b"]


def test_places_skip_after_ties():
    board = Board()
    for name, points in [("a", 3), ("b", 3), ("c", 1)]:
        board.record(name, points)
    assert board.top(3)[2] == "3. c 1"
