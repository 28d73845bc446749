"""Tests of the strict assertions (`strict.py`): the plain-data check and the test-module rewrite."""

import collections
import datetime
import decimal
import fractions
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import strict  # noqa: E402

HELPER = "__strict_helper__"


class Liar:
    """Every comparison and truth test answers whatever passes."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    def __len__(self):
        return 3

    def __contains__(self, item):
        return True

    def __iter__(self):
        return iter([True, True])

    __hash__ = object.__hash__

    @property
    def __class__(self):
        return int


class LyingInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def run(source, reported=None):
    """Runs rewritten `source` with the helper bound, returning its namespace."""
    strict.configure(report=(reported.append if reported is not None else None), trusted=[type(pytest.approx(1.0))])
    namespace = {HELPER: strict, "Liar": Liar, "LyingInt": LyingInt, "pytest": pytest}
    exec(compile(strict.rewrite_source(source, HELPER), "<test>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "value",
    [
        0, -1, 2.5, float("nan"), 1j, True, None, "text", b"bytes", bytearray(b"x"), range(3), ...,
        decimal.Decimal("1.5"), fractions.Fraction(1, 3), datetime.date(2020, 1, 2), datetime.timedelta(1),
        datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc), [1, [2, (3, {4})]], {"a": [1], 2: frozenset()},
        collections.OrderedDict(a=1), collections.Counter("aab"), collections.defaultdict(list, {1: [2]}),
        collections.deque([1, 2]), int, str,
    ],
)
def test_plain_data_passes_through_unchanged(value):
    assert strict.violation(value) is None
    assert strict.plain(value) is value


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (Liar(), "the value: an instance of the Python class test_strict.Liar"),
        (LyingInt(3), "the value: an instance of the Python class test_strict.LyingInt"),
        ([1, [2, Liar()]], "[1][1]: an instance"),
        ({"k": Liar()}, "[0-th value]: an instance"),
        ({Liar(): 1}, "<key 0>: an instance"),
        (iter([1]), "the value: a value of type builtins.list_iterator"),
    ],
)
def test_a_value_that_is_not_plain_data_is_named_with_where_it_sits(value, where):
    assert where in strict.violation(value)
    with pytest.raises(strict.UntrustedValue, match="not plain data"):
        strict.plain(value)


def test_a_cycle_is_walked_once():
    cyclic = [1]
    cyclic.append(cyclic)
    assert strict.violation(cyclic) is None


def test_a_time_zone_written_in_python_is_not_plain():
    class Zone(datetime.tzinfo):
        def utcoffset(self, dt):
            return datetime.timedelta(0)

    assert "time zone" in strict.violation(datetime.datetime(2020, 1, 1, tzinfo=Zone()))


def test_the_check_calls_no_method_of_the_value():
    class Trap:
        def __getattribute__(self, name):
            raise RuntimeError("touched " + name)

        def __eq__(self, other):
            raise RuntimeError("compared")

        __hash__ = None

    assert "Trap" in strict.violation([Trap()])


@pytest.mark.parametrize(
    "assertion",
    [
        "assert make() == 5",
        "assert 5 == make()",
        "assert make() != 4",
        "assert make()",
        "assert not make() == 4",
        "assert make() in [1, 2]",
        "assert 1 in make()",
        "assert len(make()) == 3",
        "assert bool(make())",
        "assert make() and True",
        "assert all(make())",
        "assert any(v == 1 for v in [make()])",
        "assert [make()] == [5]",
        "assert (make() == 5) is True",
        "assert isinstance(make(), object) and make() == 1",
        "assert make() == 1, 'with a message'",
        "import unittest\nunittest.TestCase().assertEqual(make(), 5)",
        "import unittest\nunittest.TestCase().assertTrue(make())",
        "import unittest\nunittest.TestCase().assertIn(1, container=make())",
    ],
)
@pytest.mark.parametrize("liar", ["Liar()", "LyingInt(7)"])
def test_no_assertion_passes_on_a_lying_object(assertion, liar):
    reported = []
    with pytest.raises(AssertionError):
        run("def make():\n    return " + liar + "\n" + assertion + "\n", reported)
    assert reported, "the untrusted value was reported"


@pytest.mark.parametrize(
    "assertion",
    [
        "assert make() == [1, 2]",
        "assert make() != [2]",
        "assert make()",
        "assert not []",
        "assert 2 in make()",
        "assert len(make()) == 2",
        "assert all(v > 0 for v in make())",
        "assert any(make())",
        "assert make() is not None and make()[0] == 1",
        "assert isinstance(make(), list)",
        "assert sum(make()) == pytest.approx(3.0000001)",
        "assert 1 < 2 < 3",
        "assert 2.0 == 2 and True == 1",
        "assert (make()\n        ==\n        [1, 2])",
        "import unittest\nunittest.TestCase().assertEqual(make(), [1, 2])",
        "import unittest\nunittest.TestCase().assertCountEqual(first=make(), second=[2, 1])",
    ],
)
def test_plain_values_are_judged_as_python_judges_them(assertion):
    reported = []
    run("def make():\n    return [1, 2]\n" + assertion + "\n", reported)
    assert reported == []


@pytest.mark.parametrize("assertion", ["assert make() == [2, 1]", "assert not make()", "assert 3 in make()", "assert len(make()) == 3"])
def test_plain_values_still_fail_honestly_without_a_report(assertion):
    reported = []
    with pytest.raises(AssertionError):
        run("def make():\n    return [1, 2]\n" + assertion + "\n", reported)
    assert reported == []


def test_isinstance_sees_the_real_type_not_a_claimed_class():
    namespace = run("def check(v):\n    assert isinstance(v, int)\n")
    namespace["check"](3)
    with pytest.raises(AssertionError):
        namespace["check"](Liar())


def test_identity_checks_are_left_alone():
    run("x = Liar()\nassert x is x\nassert x is not None\n")


def test_every_statement_keeps_its_line_so_tracebacks_point_at_the_test():
    source = "import os\n\n\ndef test_a():\n    x = 1; assert (x ==\n        1), 'm'\n    assert x\n\n\ndef test_b():\n    assert 'é' == 'é'  # comment\n    return 2\n"
    rewritten = strict.rewrite_source(source, HELPER)
    assert rewritten.count("\n") == source.count("\n")
    lines = rewritten.split("\n")
    assert lines[4].startswith("    x = 1; assert (")
    assert lines[6] == "    assert (" + HELPER + ".plain(x))"
    assert lines[10].startswith("    assert (") and lines[10].endswith("# comment")
    assert lines[11] == "    return 2"
    compile(rewritten, "<test>", "exec")


def test_source_without_assertions_is_unchanged():
    source = "def f(x):\n    return x + 1  # é\n"
    assert strict.rewrite_source(source, HELPER) == source


def test_a_syntax_error_is_raised_for_the_caller_to_judge():
    with pytest.raises(SyntaxError):
        strict.rewrite_source("def (:\n", HELPER)
