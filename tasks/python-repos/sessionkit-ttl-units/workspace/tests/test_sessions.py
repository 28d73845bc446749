from datetime import datetime, timedelta, timezone

from sessionkit import SessionStore
from sessionkit.tokens import is_valid, make_token

START = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def test_login_and_logout():
    store = SessionStore(lambda: START)
    value = store.login("ada")
    assert store.user_of(value) == "ada"
    store.logout(value)
    assert store.user_of(value) is None


def test_token_validity_window():
    token = make_token("ada", START, ttl_seconds=60)
    assert is_valid(token, START + timedelta(seconds=59))
    assert not is_valid(token, START + timedelta(seconds=60))
