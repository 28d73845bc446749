from .errors import GaveUp, Transient


def call_with_retries(fn, policy, sleep):
    """Calls fn(); on Transient waits and retries as the policy says (one first attempt plus `retries` more)."""
    attempts = 0
    last = None
    waits = policy.delays()
    for wait in [0.0] + waits[:-1]:
        if wait:
            sleep(wait)
        attempts += 1
        try:
            return fn()
        except Transient as error:
            last = error
    raise GaveUp(attempts, last)
