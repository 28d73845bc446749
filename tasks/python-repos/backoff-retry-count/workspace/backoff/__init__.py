from .client import call_with_retries
from .policy import Policy

__all__ = ["Policy", "call_with_retries"]
