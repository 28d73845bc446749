from memo import distance, memoize

PARIS, LONDON = (48.8566, 2.3522), (51.5074, -0.1278)


def test_unit_is_part_of_the_key():
    assert distance(PARIS, LONDON, unit="km") == 343.6
    assert distance(PARIS, LONDON, unit="mi") == 213.5


def test_keyword_order_does_not_matter():
    @memoize
    def area(w, h=1, scale=1):
        return w * h * scale

    assert area(2, h=3, scale=2) == 12
    assert area(2, scale=2, h=3) == 12
    assert area(2, h=5) == 10
    assert area.cache_info() == {"hits": 1, "misses": 2}


def test_positional_calls_still_cached():
    @memoize
    def double(x):
        return 2 * x

    double(1)
    double(1)
    assert double.cache_info()["hits"] == 1
