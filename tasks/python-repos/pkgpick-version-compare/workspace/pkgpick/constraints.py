from .version import parse

OPERATORS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


def allows(constraint, version):
    """Whether `version` meets every comma-separated clause of `constraint` (`>=1.2,<2`)."""
    for clause in filter(None, (c.strip() for c in constraint.split(","))):
        op = next((o for o in (">=", "<=", "==", ">", "<") if clause.startswith(o)), None)
        if op is None:
            raise ValueError(f"no operator in {clause!r}")
        if not OPERATORS[op](parse(version), parse(clause[len(op):])):
            return False
    return True
