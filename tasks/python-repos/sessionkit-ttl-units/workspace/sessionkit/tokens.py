import hashlib
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class Token:
    user: str
    value: str
    issued_at: object
    expires_at: object


def make_token(user, now, ttl_seconds, secret="dev"):
    """A token for `user`, valid for `ttl_seconds` from `now`."""
    value = hashlib.sha256(f"{secret}:{user}:{now.isoformat()}".encode()).hexdigest()[:32]
    return Token(user, value, now, now + timedelta(seconds=ttl_seconds))


def is_valid(token, now):
    return token.issued_at <= now < token.expires_at
