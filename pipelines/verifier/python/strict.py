"""Strict assertions: a verdict that no method of the agent's objects can decide.

`assert f(x) == expected` calls the `__eq__` of whatever `f` returned, so an object whose `__eq__`
always answers True (or whose `__bool__`, `__len__`, `__contains__`, ... lie) would pass every test.
The verifier rewrites the task's test modules before pytest sees them (`rewrite_source`): every operand
an assertion compares or tests for truth goes through `plain()`, which lets through plain data only,
checked by exact type, recursively, without calling a single method of the value. A value that is not
plain data fails the assertion (`UntrustedValue`) and is reported, so the run is flagged with the
value's type and the test that met it. Plain values then compare with Python's own semantics, so a
correct solution returning plain values is judged exactly as before.

The runner uses `rewrite_source`; the witness loads this module into the pytest process before any agent
code and binds it to a builtin name only the rewritten tests use.
"""

import ast
import collections
import datetime
import decimal
import fractions

_type = type
_id = id
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class created by Python code, not by the interpreter
_FLAGS = type.__dict__["__flags__"].__get__
_QUALNAME = type.__dict__["__qualname__"].__get__
_MODULE = type.__dict__["__module__"].__get__
_DICT_ITEMS = dict.items

# Exact types whose values are data: comparing, hashing or testing them runs no code but the interpreter's
# (or the standard library's, for the number and date types).
SCALARS = frozenset(
    {
        int, float, complex, bool, str, bytes, bytearray, type(None), type(Ellipsis), range,
        decimal.Decimal, fractions.Fraction, datetime.date, datetime.time, datetime.timedelta, datetime.datetime,
    }
)
SEQUENCES = frozenset({list, tuple, set, frozenset, collections.deque})
MAPPINGS = frozenset({dict, collections.OrderedDict, collections.defaultdict, collections.Counter})
_ZONES = frozenset({type(None), datetime.timezone})
# A value may be this big before the check gives up (and fails the assertion) rather than walk it all.
MAX_ITEMS = 5_000_000


class UntrustedValue(AssertionError):
    """An assertion met a value that is not plain data; its own methods, not the test, would decide."""


# Set once by `configure`; module globals, so the witness's snapshot sees any replacement.
_REPORT = None
_TRUSTED = frozenset()


def configure(report=None, trusted=()):
    """`report(evidence)` is told of each untrusted value; `trusted` are exact types that compare honestly (pytest.approx)."""
    global _REPORT, _TRUSTED
    _REPORT = report
    _TRUSTED = frozenset(trusted)


def type_name(cls):
    """`module.qualname` of a class, read through `type`'s own slots (a metaclass cannot lie about them)."""
    module = _MODULE(cls)
    module = module if _type(module) is str else "?"
    return module + "." + _QUALNAME(cls)


def _where(path):
    parts = []
    while path is not None:
        path, key = path
        parts.append(key)
    return "".join(reversed(parts)) or "the value"


def violation(value):
    """The first part of `value` that is not plain data, as 'where: what', or None when all of it is."""
    trusted = _TRUSTED
    stack, seen, count = [(value, None)], set(), 0
    while stack:
        item, path = stack.pop()
        cls = _type(item)
        if cls in SCALARS:
            if cls is datetime.datetime or cls is datetime.time:
                if _type(item.tzinfo) not in _ZONES:
                    return _where(path) + ": a time zone of type " + type_name(_type(item.tzinfo))
            continue
        if cls is type or cls in trusted:
            continue  # a class compares by identity; pytest.approx compares plain numbers itself
        if cls not in SEQUENCES and cls not in MAPPINGS:
            kind = "an instance of the Python class " if _FLAGS(cls) & _HEAP_TYPE else "a value of type "
            return _where(path) + ": " + kind + type_name(cls)
        if _id(item) in seen:
            continue
        seen.add(_id(item))
        count += 1
        if count > MAX_ITEMS:
            return _where(path) + ": more than %d nested containers" % MAX_ITEMS
        if cls in MAPPINGS:
            for index, (key, member) in enumerate(_DICT_ITEMS(item)):
                stack.append((key, (path, "<key %d>" % index)))
                stack.append((member, (path, "[%d-th value]" % index)))
        else:
            for index, member in enumerate(item):
                stack.append((member, (path, "[%d]" % index)))
    return None


def plain(value):
    """`value` itself when it is plain data; otherwise the assertion fails and the value is reported."""
    problem = violation(value)
    if problem is None:
        return value
    if _REPORT is not None:
        _REPORT(problem)
    raise UntrustedValue("the assertion compared or tested a value that is not plain data (" + problem + ")")


def is_instance(value, classes):
    """`isinstance` on the value's real type: an object cannot claim another class through `__class__`."""
    return issubclass(_type(value), classes)


def _plain_iterable(iterable):
    cls = _type(iterable)
    if _FLAGS(cls) & _HEAP_TYPE and cls not in SEQUENCES and cls not in MAPPINGS:
        plain(iterable)  # an iterable the agent wrote decides what it yields
    for item in iterable:
        yield plain(item)


def all_(iterable):
    return all(_plain_iterable(iterable))


def any_(iterable):
    return any(_plain_iterable(iterable))


# -- the rewrite ---------------------------------------------------------------------------------------

_IDENTITY = (ast.Is, ast.IsNot)
# unittest's assertion methods and how many leading arguments are compared values (keywords by name).
UNITTEST_ASSERTS = {
    "assertEqual": 2, "assertEquals": 2, "assertNotEqual": 2, "assertTrue": 1, "assertFalse": 1,
    "assertIn": 2, "assertNotIn": 2, "assertAlmostEqual": 2, "assertNotAlmostEqual": 2, "assertGreater": 2,
    "assertGreaterEqual": 2, "assertLess": 2, "assertLessEqual": 2, "assertListEqual": 2, "assertTupleEqual": 2,
    "assertDictEqual": 2, "assertSetEqual": 2, "assertSequenceEqual": 2, "assertCountEqual": 2,
    "assertMultiLineEqual": 2,
}
_UNITTEST_KEYWORDS = frozenset({"first", "second", "expr", "member", "container", "seq1", "seq2", "list1", "list2", "d1", "d2", "set1", "set2", "tuple1", "tuple2"})


class _Strict(ast.NodeTransformer):
    """Wraps what an assertion expression compares or tests for truth in the helper's checks."""

    def __init__(self, helper):
        self.helper = helper

    def call(self, function, *args):
        node = ast.Call(func=ast.Attribute(value=ast.Name(id=self.helper, ctx=ast.Load()), attr=function, ctx=ast.Load()), args=list(args), keywords=[])
        return ast.copy_location(node, args[0]) if args else node

    def wrap(self, node):
        # Results the interpreter makes itself need no check: a comparison or `not` is a real bool.
        if isinstance(node, (ast.Compare, ast.Constant)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == self.helper:
            return node
        return self.call("plain", node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        checked = []
        for index, operand in enumerate(operands):
            neighbours = node.ops[max(0, index - 1) : index + 1]
            checked.append(operand if all(isinstance(op, _IDENTITY) for op in neighbours) else self.wrap(operand))
        node.left, node.comparators = checked[0], checked[1:]
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [self.wrap(value) for value in node.values]
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            node.operand = self.wrap(node.operand)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and not node.keywords:
            name = node.func.id
            if name in ("len", "bool") and len(node.args) == 1:
                node.args = [self.wrap(node.args[0])]
            elif name == "isinstance" and len(node.args) == 2:
                return ast.copy_location(self.call("is_instance", *node.args), node)
            elif name in ("all", "any") and len(node.args) == 1:
                return ast.copy_location(self.call(name + "_", node.args[0]), node)
        return node


def _rewritten(statement, helper):
    """The strict form of one statement, or None when it asserts nothing."""
    strict = _Strict(helper)
    if isinstance(statement, ast.Assert):
        test = strict.wrap(strict.visit(statement.test))
        return ast.Assert(test=test, msg=statement.msg)
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in UNITTEST_ASSERTS:
        compared = UNITTEST_ASSERTS[call.func.attr]
        args = [strict.wrap(strict.visit(a)) if i < compared else a for i, a in enumerate(call.args)]
        keywords = [ast.keyword(arg=k.arg, value=strict.wrap(strict.visit(k.value))) if k.arg in _UNITTEST_KEYWORDS else k for k in call.keywords]
        return ast.Expr(value=ast.Call(func=call.func, args=args, keywords=keywords))
    return None


def _line_starts(data):
    starts = [0]
    for index, byte in enumerate(data):
        if byte == 10:
            starts.append(index + 1)
    return starts


def rewrite_source(source, helper):
    """`source` with every assertion made strict; each statement keeps its lines, so tracebacks still point at them.

    Raises SyntaxError when the source does not parse (pytest would report the same as a collection error).
    """
    tree = ast.parse(source)
    data = source.encode("utf-8")
    starts = _line_starts(data)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assert, ast.Expr)):
            continue
        strict = _rewritten(node, helper)
        if strict is None:
            continue
        # Parenthesised, so the newlines that keep the statement's line count are legal anywhere in it.
        newlines = "\n" * (node.end_lineno - node.lineno)
        if isinstance(strict, ast.Assert):
            text = "assert (" + ast.unparse(strict.test) + newlines + ")"
            if strict.msg is not None:
                text += ", (" + ast.unparse(strict.msg) + ")"
        else:
            text = "(" + ast.unparse(strict.value) + newlines + ")"
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        edits.append((start, end, text.encode("utf-8")))
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text + data[end:]
    return data.decode("utf-8")
