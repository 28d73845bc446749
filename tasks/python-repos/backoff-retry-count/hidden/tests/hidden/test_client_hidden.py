import pytest

from backoff import Policy, call_with_retries
from backoff.errors import GaveUp, Transient


def flaky(failures):
    state = {"calls": 0}

    def fn():
        state["calls"] += 1
        if state["calls"] <= failures:
            raise Transient(f"failure {state['calls']}")
        return "ok"

    return fn, state


def test_succeeds_on_the_last_retry():
    fn, state = flaky(3)
    slept = []
    assert call_with_retries(fn, Policy(retries=3, base_s=1, factor=2), sleep=slept.append) == "ok"
    assert state["calls"] == 4
    assert slept == [1, 2, 4]


def test_attempts_counted():
    fn, _ = flaky(10)
    with pytest.raises(GaveUp) as info:
        call_with_retries(fn, Policy(retries=2), sleep=lambda s: None)
    assert info.value.attempts == 3


def test_no_retries():
    fn, state = flaky(1)
    with pytest.raises(GaveUp):
        call_with_retries(fn, Policy(retries=0), sleep=lambda s: None)
    assert state["calls"] == 1
