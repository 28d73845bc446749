from .constraints import allows
from .version import parse


def satisfying(versions, constraint):
    return sorted((v for v in versions if allows(constraint, v)), key=parse)


def latest(versions, constraint=""):
    matching = satisfying(versions, constraint)
    if not matching:
        raise LookupError(f"no version meets {constraint!r}")
    return matching[-1]
