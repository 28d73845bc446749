import functools

from .keys import make_key


def memoize(fn):
    """Caches fn's results per call; `fn.cache_info()` tells hits and misses."""
    store = {}
    stats = {"hits": 0, "misses": 0}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        key = make_key(args, kwargs)
        if key in store:
            stats["hits"] += 1
            return store[key]
        stats["misses"] += 1
        store[key] = fn(*args, **kwargs)
        return store[key]

    wrapper.cache_info = lambda: dict(stats)
    wrapper.cache_clear = store.clear
    return wrapper
