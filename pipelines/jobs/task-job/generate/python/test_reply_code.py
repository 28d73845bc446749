import json
import os
import subprocess
import sys

import pytest

from reply_code import expression_of, find_expression, unfenced

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("sum(xs)", "sum(xs)"),
        ("```python\nsum(xs)\n```", "sum(xs)"),
        ("```\nsum(xs)\n```\nThis adds them.", "sum(xs)"),
        ("`sum(xs)`", "sum(xs)"),
        ("result = sum(xs)", "sum(xs)"),
        ("return sum(xs)", "sum(xs)"),
        ("print(sum(xs))", "sum(xs)"),
        ("x == 1", "x == 1"),
        ("  len(s)  \n", "len(s)"),
    ],
)
def test_expression_of_takes_the_answer_out_of_its_wrapping(reply, expected):
    assert expression_of(reply) == expected


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("```python\ndef f(xs):\n    return len([x for x in xs if x < 9])\n```", "len([x for x in xs if x < 9])"),
        ("You can use `sum(xs)` here, or a loop.", "sum(xs)"),
        ("Here is the answer:\n\nmax(xs) + 3\n\nIt adds three.", "max(xs) + 3"),
        ("```python\nys = [1, 2]\nprint(sum(ys))\n```", "[1, 2]"),
        ("I cannot answer that.", None),
        ("", None),
    ],
)
def test_find_expression_takes_the_first_answer_that_parses(reply, expected):
    assert find_expression(reply) == expected


def test_find_expression_passes_over_an_example_input_for_the_task_variable():
    assert find_expression("```python\nxs = [1, 2]\nprint(sum(xs))\n```", "xs") == "sum(xs)"
    assert find_expression("xs == [1]", "xs") == "xs == [1]"


def test_unfenced_keeps_an_unfenced_reply_and_an_unclosed_fence():
    assert unfenced('{"a": 1}') == '{"a": 1}'
    assert unfenced('```json\n{"a": 1}') == '{"a": 1}'


def grade(tmp_path, reply, variable, values):
    (tmp_path / "answer.txt").write_text(reply)
    (tmp_path / "cases.json").write_text(json.dumps({"variable": variable, "values": values}))
    env = {**os.environ, "PYTHONPATH": HERE}
    subprocess.run([sys.executable, os.path.join(HERE, "grade_expression.py")], cwd=tmp_path, check=True, env=env, timeout=60)
    valid = (tmp_path / "results" / "valid.txt").read_text()
    cases = [json.loads((tmp_path / "results" / f"case-{i}.json").read_text()) for i in range(1, len(values) + 1)]
    return valid, cases


def test_grade_expression_writes_each_case_value(tmp_path):
    valid, cases = grade(tmp_path, "```python\n[x * 2 for x in xs]\n```", "xs", [[1, 2], [], [5]])
    assert valid == "valid"
    assert cases == [[2, 4], [], [10]]


def test_grade_expression_marks_statements_and_errors(tmp_path):
    valid, cases = grade(tmp_path, "for x in xs: print(x)\nThat loops.", "xs", [[1]])
    assert (valid, cases) == ("invalid", [{"error": "not an expression"}])
    valid, cases = grade(tmp_path, "xs[10]", "xs", [[1]])
    assert (valid, cases) == ("valid", [{"error": "IndexError"}])


def test_grade_expression_stops_a_runaway_case(tmp_path):
    valid, cases = grade(tmp_path, "sum(range(10**12))", "n", [1])
    assert (valid, cases) == ("valid", [{"error": "ran past 2 s"}])


def test_grade_expression_refuses_values_json_cannot_carry(tmp_path):
    valid, cases = grade(tmp_path, "set(xs)", "xs", [[1]])
    assert (valid, cases) == ("valid", [{"error": "TypeError"}])
