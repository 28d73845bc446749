import pytest

from backoff import Policy, call_with_retries
from backoff.errors import GaveUp, Transient


def test_first_try():
    assert call_with_retries(lambda: 42, Policy(), sleep=lambda s: None) == 42


def test_other_errors_are_not_retried():
    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        call_with_retries(boom, Policy(), sleep=lambda s: None)


def test_delays():
    assert Policy(retries=4, base_s=1, factor=2, cap_s=5).delays() == [1, 2, 4, 5]


def test_gives_up():
    def always():
        raise Transient("down")

    with pytest.raises(GaveUp):
        call_with_retries(always, Policy(retries=2), sleep=lambda s: None)
