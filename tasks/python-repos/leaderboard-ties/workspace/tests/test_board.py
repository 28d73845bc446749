from leaderboard import Board


def test_best_first():
    board = Board()
    board.record("ann", 5)
    board.record("bob", 9)
    board.record("ann", 1)
    assert board.top(2) == ["1. bob 9", "2. ann 6"]


def test_top_cuts():
    board = Board()
    for name, points in [("a", 1), ("b", 2), ("c", 3)]:
        board.record(name, points)
    assert len(board.top(2)) == 2
