from statkit import variance


def test_variance():
    assert variance([1, 1, 1]) == 0
