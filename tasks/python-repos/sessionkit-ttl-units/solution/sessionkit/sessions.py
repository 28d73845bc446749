from .settings import SESSION_MINUTES
from .tokens import is_valid, make_token


class SessionStore:
    def __init__(self, clock):
        self._clock = clock
        self._by_value = {}

    def login(self, user):
        token = make_token(user, self._clock(), ttl_seconds=SESSION_MINUTES * 60)
        self._by_value[token.value] = token
        return token.value

    def user_of(self, value):
        """The user of a live session, else None (an expired session is forgotten)."""
        token = self._by_value.get(value)
        if token is None:
            return None
        if not is_valid(token, self._clock()):
            del self._by_value[value]
            return None
        return token.user

    def logout(self, value):
        self._by_value.pop(value, None)
