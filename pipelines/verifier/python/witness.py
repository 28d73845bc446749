# The witness: runs inside the pytest process before any agent code is imported. It reports what the
# session really did over a pipe only the supervisor reads (collected items, each phase's raw outcome
# and reported outcome, collection errors, the report's hash when pytest wrote it), and watches for
# tampering: replaced functions of pytest, pluggy, unittest and builtins, plugins registered from agent
# code, and audit events (file writes, process starts, frame inspection) raised from agent code. It also
# loads the strict assertions (strict.py) that the rewritten test modules reach through a builtin name,
# and reports every value they refuse.
import builtins
import hashlib
import json
import os
import sys
import types

_cfg = config  # noqa: F821 -- bound by the bootstrap
_write, _dumps, _exit, _getframe, _realpath = os.write, json.dumps, os._exit, sys._getframe, os.path.realpath
_FD = _cfg["fd"]
_PROGRESS = _cfg["progressFd"]
_AGENT = frozenset(_cfg["agentFiles"])
_TESTS = frozenset(_cfg["testFiles"])
_REPORT = _cfg["report"]
_REPORT_DIR = os.path.dirname(_REPORT)
_WORKSPACE = _cfg["workspace"]
_state = {"busy": False, "phase": "startup", "reported": set()}


def _emit(event, **data):
    data["event"] = event
    try:
        _write(_FD, (_dumps(data, default=repr) + "\n").encode("utf-8", "replace"))
    except OSError:
        pass  # the channel was closed from inside: the supervisor notices the silence


def _agent_frame(depth):
    """The innermost frame of agent code on the stack (file and line), or None."""
    frame = _getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in _AGENT:
            return filename[len(_WORKSPACE) + 1 :], frame.f_lineno
        frame = frame.f_back
    return None


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_SPAWN = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"})
_NATIVE = frozenset({"ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.addressof", "ctypes.string_at", "ctypes.cdata"})
_INTROSPECT = frozenset({"sys._getframe", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames"})
_TRACE = frozenset({"sys.settrace", "sys.setprofile"})
_WATCHED = _SPAWN | _NATIVE | _INTROSPECT | _TRACE | frozenset({"open", "os.remove", "os.rename", "os.rmdir", "shutil.rmtree", "os.truncate", "object.__setattr__", "os.chmod"})
_HELPER = _cfg["helper"]
_PROTECTED_ROOTS = ("_pytest", "pytest", "pluggy", "unittest", "builtins", "iniconfig", _HELPER)


def _path_kind(path):
    if path == _REPORT or path.startswith(_REPORT_DIR + os.sep) or path.endswith(".xml"):
        return "fake-report"
    if path in _TESTS:
        return "test-edited"
    name = os.path.basename(path)
    if name == "conftest.py" or name.endswith(".pth") or name in ("sitecustomize.py", "usercustomize.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"):
        return "startup-hook" if name != "conftest.py" else "conftest"
    if "__pycache__" in path or name.endswith(".pyc"):
        return "bytecode"
    return None


def _audit(event, args):
    if event not in _WATCHED or _state["busy"]:
        return
    _state["busy"] = True
    try:
        kind, what = None, None
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and isinstance(path, (str, bytes)):
                path = _realpath(os.fsdecode(path))
                kind, what = _path_kind(path), "opens " + path + " for writing"
        elif event in ("os.remove", "os.rmdir", "shutil.rmtree", "os.truncate", "os.chmod", "os.rename"):
            path = args[0]
            if isinstance(path, (str, bytes)):
                path = _realpath(os.fsdecode(path))
                kind = _path_kind(path)
                if kind == "test-edited" and event != "os.chmod":
                    kind = "test-deleted" if event in ("os.remove", "os.rmdir", "shutil.rmtree", "os.rename") else kind
                what = event + " " + path
        elif event in _SPAWN:
            kind, what = "escape-attempt", "starts a process (" + event + ")"
        elif event in _NATIVE:
            kind, what = "escape-attempt", "calls native code (" + event + ")"
        elif event in _INTROSPECT:
            # Only when agent code itself asks: the stdlib (namedtuple, inspect) uses frames for itself.
            caller = _getframe(1)
            if caller is not None and caller.f_code.co_filename in _AGENT:
                kind, what = "introspection", "inspects frames or objects (" + event + ")"
        elif event in _TRACE:
            kind, what = "monkeypatch", "installs a tracer (" + event + ")"
        elif event == "object.__setattr__":
            target, name = args[0], args[1]
            module = getattr(target, "__module__", None) or ""
            if name in ("__code__", "__class__") and isinstance(module, str) and module.split(".")[0] in _PROTECTED_ROOTS:
                kind, what = "monkeypatch", "replaces " + name + " of " + module + "." + str(getattr(target, "__qualname__", "?"))
        if kind is not None:
            where = _agent_frame(1)
            if where is not None:
                key = (kind, what)
                if key not in _state["reported"]:
                    _state["reported"].add(key)
                    _emit("audit", kind=kind, evidence=what, path=where[0], line=where[1], phase=_state["phase"])
    except Exception as error:  # a watcher must never break the run it watches
        _emit("witness-error", where="audit", error=repr(error))
    finally:
        _state["busy"] = False


sys.addaudithook(_audit)

import pytest  # noqa: E402
import _pytest.outcomes  # noqa: E402

_SKIP = _pytest.outcomes.Skipped
_MISSING = object()


def _approx_types():
    """pytest.approx's classes: they compare plain numbers themselves, so the strict checks let them through."""
    base = type(pytest.approx(0.0))
    while base.__base__ is not object:
        base = base.__base__
    found, todo = set(), [base]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def _untrusted(evidence):
    _emit("untrusted-value", evidence=evidence, phase=_state["phase"])


_STRICT = types.ModuleType(_HELPER)
exec(compile(_cfg.pop("strict"), "<trialrun-strict>", "exec"), _STRICT.__dict__)
_STRICT.configure(report=_untrusted, trusted=_approx_types())
sys.modules[_HELPER] = _STRICT
setattr(builtins, _HELPER, _STRICT)


def _protected_modules():
    out = []
    for name, module in list(sys.modules.items()):
        if module is not None and (name.split(".")[0] in _PROTECTED_ROOTS or name in ("importlib", "importlib._bootstrap", "importlib._bootstrap_external")):
            out.append((name, module))
    return out


def _callable_entries(namespace):
    for name, value in list(namespace.items()):
        if callable(value) or isinstance(value, (property, staticmethod, classmethod)):
            yield name, value


class _Snapshot:
    """Holds strong references to the machinery so identity comparisons stay valid (no id reuse)."""

    SYS = ("exit", "excepthook", "settrace", "setprofile", "addaudithook", "_getframe")
    OS = ("_exit", "kill", "abort", "write", "fork")

    def __init__(self):
        self.entries = []
        for name, module in _protected_modules():
            namespace = vars(module)
            for attr, value in _callable_entries(namespace):
                self.entries.append((name, namespace, attr, value, getattr(value, "__code__", None)))
                if isinstance(value, type) and value.__module__ == name:
                    class_ns = value.__dict__
                    for cattr, cvalue in _callable_entries(class_ns):
                        self.entries.append((name + "." + value.__qualname__, class_ns, cattr, cvalue, getattr(cvalue, "__code__", None)))
        for attr in self.SYS:
            self.entries.append(("sys", vars(sys), attr, getattr(sys, attr), None))
        for attr in self.OS:
            self.entries.append(("os", vars(os), attr, getattr(os, attr), None))
        self.entries.append(("builtins", vars(builtins), _HELPER, _STRICT, None))
        # Every global of the strict checks (their type lists, the report hook), not only the callables.
        for attr, value in list(vars(_STRICT).items()):
            self.entries.append((_HELPER, vars(_STRICT), attr, value, getattr(value, "__code__", None)))
        self.modules = {name: module for name, module in _protected_modules()}
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)

    def changes(self):
        found = []
        for owner, namespace, attr, value, code in self.entries:
            now = namespace.get(attr, _MISSING)
            if now is _MISSING:
                found.append(owner + "." + attr + " was deleted")
            elif now is not value:
                found.append(owner + "." + attr + " was replaced")
            elif code is not None and getattr(now, "__code__", None) is not code:
                found.append(owner + "." + attr + " had its code replaced")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append("sys.modules[" + repr(name) + "] was replaced")
        # A global of that name in a test module would shadow the builtin the strict assertions are reached by.
        for name, module in list(sys.modules.items()):
            if type(module) is types.ModuleType:
                namespace = object.__getattribute__(module, "__dict__")
                if namespace.get("__file__") in _TESTS and _HELPER in namespace:
                    found.append("the test module " + name + " got a global that shadows the strict assertions")
        if [id(f) for f in sys.meta_path] != [id(f) for f in self.meta_path]:
            found.append("sys.meta_path was changed")
        if [id(h) for h in sys.path_hooks] != [id(h) for h in self.path_hooks]:
            found.append("sys.path_hooks was changed")
        return found


def _report_sha():
    try:
        with open(_REPORT, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


class Witness:
    def __init__(self):
        self.snapshot = None
        self.plugins = None
        self.config = None
        self.reported = set()

    def check(self, phase):
        if self.snapshot is None:
            return
        changes = [c for c in self.snapshot.changes() if c not in self.reported]
        if self.config is not None:
            names = {id(p) for p in self.config.pluginmanager.get_plugins()}
            for plugin in self.config.pluginmanager.get_plugins():
                if id(plugin) not in self.plugins:
                    label = "a pytest plugin " + repr(getattr(plugin, "__name__", type(plugin).__name__)) + " was registered"
                    if label not in self.reported:
                        changes.append(label)
            del names
        for change in changes:
            self.reported.add(change)
            _emit("tamper", evidence=change, phase=phase)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        config = session.config
        self.config = config
        self.snapshot = _Snapshot()
        self.plugins = {id(p) for p in config.pluginmanager.get_plugins()}
        _emit("configured", plugins=len(self.plugins), watched=len(self.snapshot.entries))

    def pytest_collectstart(self, collector):
        _state["phase"] = "collect " + collector.nodeid
        _emit("collect-start", nodeid=collector.nodeid)

    def pytest_collectreport(self, report):
        if report.failed:
            _emit("collect-error", nodeid=report.nodeid, text=str(report.longrepr)[-2000:])

    def pytest_collection_finish(self, session):
        _emit("collected", items=[item.nodeid for item in session.items])
        self.check("collection")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        _state["phase"] = "test " + item.nodeid
        try:
            _write(_PROGRESS, ("trialrun-runner: running " + item.nodeid[:300] + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        yield
        self.check("test " + item.nodeid)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is None:
            raw = "passed"
        elif call.excinfo.errisinstance(_SKIP):
            raw = "skipped"
        else:
            raw = "failed"
        exc = None if call.excinfo is None else call.excinfo.typename
        outcome = yield
        try:
            reported = outcome.get_result().outcome
        except BaseException as error:  # noqa: B036 -- reported as what it is
            reported = "error: " + repr(error)[:200]
        _emit("phase", nodeid=item.nodeid, when=call.when, raw=raw, reported=reported, exc=exc)

    def pytest_runtest_logreport(self, report):
        _emit("logreport", nodeid=report.nodeid, when=report.when, outcome=report.outcome)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        _state["phase"] = "session finish"
        self.check("session finish")
        yield
        _emit("session-finish", exitstatus=int(exitstatus), reportSha=_report_sha())

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        _emit("unconfigure", reportSha=_report_sha())


_emit("start", pid=os.getpid())
try:
    _code = pytest.main(_cfg["args"], plugins=[Witness()])
except BaseException as error:  # noqa: B036 -- agent code can raise anything, even SystemExit from a hook
    _emit("main-raised", error=repr(error)[:500])
    _code = 70
try:
    sys.stdout.flush()
    sys.stderr.flush()
except Exception:
    pass
_emit("exit", code=int(_code))
# Never run atexit handlers or finalizers registered by agent code: they could rewrite the report.
_exit(int(_code))
