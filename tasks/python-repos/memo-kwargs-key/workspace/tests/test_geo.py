from memo import distance, memoize

PARIS, LONDON = (48.8566, 2.3522), (51.5074, -0.1278)


def test_distance_km():
    assert distance(PARIS, LONDON) == 343.6


def test_memo_counts():
    calls = []

    @memoize
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9 and square(3) == 9
    assert calls == [3]
    assert square.cache_info() == {"hits": 1, "misses": 1}
