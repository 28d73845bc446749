from datetime import datetime, timedelta, timezone

from sessionkit import SessionStore

START = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now


def test_session_lasts_half_an_hour():
    clock = Clock()
    store = SessionStore(clock)
    value = store.login("ada")
    clock.now = START + timedelta(minutes=29)
    assert store.user_of(value) == "ada"


def test_session_ends_after_half_an_hour():
    clock = Clock()
    store = SessionStore(clock)
    value = store.login("ada")
    clock.now = START + timedelta(minutes=30)
    assert store.user_of(value) is None


def test_unknown_session():
    assert SessionStore(Clock()).user_of("nope") is None
