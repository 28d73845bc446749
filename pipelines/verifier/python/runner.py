# Trusted supervisor of one verification run, exec'd by bootstrap.py under 'python3 -I' in a fresh
# sandbox. It writes the files, makes the task's assertions strict (strict.py), inspects the agent's
# Python with ast (never importing it), runs pytest in a child process whose witness plugin reports over
# a private pipe, kills anything the child left behind, and prints one result line framed by a nonce
# that only this process knows. Progress goes to stderr, so a run that is killed still says how far it got.
# Mode 'setup' only writes the files (for the verification kinds whose check is a command of its own).
import ast
import base64
import errno
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

JOB = job  # noqa: F821 -- bound by the bootstrap that exec'd this source
STRICT = {"__name__": "trialrun_strict"}
exec(compile(JOB["strict"], "<trialrun-strict>", "exec"), STRICT)
# The builtin name the rewritten assertions reach the strict checks by; fresh for every run.
HELPER = "__trialrun_strict_" + secrets.token_hex(8) + "__"
# The sandbox starts commands in its workspace, wherever a backend puts it.
WORKSPACE = os.path.realpath(os.getcwd())
OUTPUT_CAP = 32 * 1024
REPORT_CAP = 4 * 1024 * 1024
WITNESS_CAP = 8 * 1024 * 1024
# Witness lines parsed into the result; more (a flood written into the channel) are counted, not kept.
WITNESS_EVENTS_CAP = 20000
WITNESS_LINE_CAP = 1024 * 1024
# The host reads at most 24 MiB of this process's stdout; a result near that is a forgery's doing.
RESULT_CAP = 20 * 1024 * 1024


def _prctl(option, value):
    try:
        import ctypes

        return ctypes.CDLL(None).prctl(option, value, 0, 0, 0) == 0
    except Exception:
        return False


def _undumpable():
    # Same-uid processes cannot read /proc/<pid>/fd or memory of a non-dumpable process, so the child
    # cannot write to this process's stdout or read the nonce.
    return _prctl(4, 0)  # PR_SET_DUMPABLE


def _die_with_parent(parent):
    """Run in the test process between fork and exec: it never outlives this runner (a kill(-1) spares its caller)."""
    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the runner died before the request took effect
        os._exit(70)


def _subreaper():
    # Orphans of the test process become this process's children instead of init's, so none escape.
    return _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


FRAMEWORK_NAMES = {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "attr", "attrs", "exceptiongroup", "tomli", "importlib_metadata", "zipp", "more_itertools", "typing_extensions", "pkg_resources", "setuptools", "trialrun_witness", "conftest"}


def _shadowed(rel):
    """The module an agent file would shadow (standard library or anything installed), or None."""
    top = rel.split("/")[0]
    name = top[:-3] if top.endswith(".py") and "/" not in rel else top
    if not name.isidentifier() or (top == rel and not rel.endswith(".py")):
        return None
    if name in sys.stdlib_module_names or name in FRAMEWORK_NAMES:
        return name
    try:
        import importlib.util

        return name if importlib.util.find_spec(name) is not None else None
    except (ImportError, ValueError):
        return None


def _shown(rel):
    """A path as evidence text: bytes that are not UTF-8 shown as \\x escapes."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def _finding(kind, rel, evidence):
    return {"kind": kind, "path": _shown(rel), "line": None, "evidence": evidence}


# A name the file system refuses (too long, a directory in the way) is the agent's problem, not a crash.
_NAME_ERRORS = (errno.ENAMETOOLONG, errno.EINVAL, errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ELOOP)


def _target(rel):
    target = os.path.realpath(os.path.join(WORKSPACE, rel))
    if not target.startswith(WORKSPACE + os.sep):
        raise ValueError("refusing to write outside the workspace: " + _shown(rel))
    return target


def _write_file(rel, content):
    target = _target(rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(content)


def _write_agent_files(entries, findings):
    """Writes the agent's files under their real names; returns the names written."""
    written = []
    for rel, content in entries:
        try:
            _write_file(rel, content)
            written.append(rel)
        except OSError as error:
            if error.errno not in _NAME_ERRORS:
                raise
            findings.append(_finding("unsafe-path", rel, "the file " + _shown(rel)[:200] + " could not be written: " + os.strerror(error.errno)))
        except ValueError as error:
            findings.append(_finding("unsafe-path", rel, str(error)[:300]))
    return written


def _make_symlinks(links, protected, findings):
    """Recreates the agent's symlinks; one that resolves out of the workspace or onto a task file is removed and flagged."""
    made = []
    for path, target in links:
        where = os.path.join(WORKSPACE, path)
        shown = _shown(path) + " -> " + _shown(target)
        try:
            if os.path.dirname(path):
                _target(os.path.dirname(path))  # its folder must be inside the workspace already
            os.makedirs(os.path.dirname(where), exist_ok=True)
            os.symlink(target, where)
        except (OSError, ValueError) as error:
            findings.append(_finding("unsafe-path", path, "the symlink " + shown[:300] + " could not be made: " + str(error)[:200]))
            continue
        made.append((path, where, shown))
    kept = []
    for path, where, shown in made:
        real = os.path.realpath(where)
        if not real.startswith(WORKSPACE + os.sep):
            problem = "resolves outside the workspace, to " + _shown(real)
        elif real in protected:
            problem = "resolves to the task's test file " + _shown(real[len(WORKSPACE) + 1 :])
        else:
            kept.append(path)
            continue
        os.unlink(where)
        findings.append(_finding("unsafe-symlink", path, "the symlink " + shown[:300] + " " + problem[:300]))
    return kept


def _clear_way(rel, findings):
    """Removes agent symlinks on the way to a task file: the pristine file is written where pytest will read it."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = os.path.join(WORKSPACE, *parts[:depth])
        if os.path.islink(prefix):
            os.unlink(prefix)
            findings.append(_finding("unsafe-symlink", "/".join(parts[:depth]), "a symlink stood where the task's file " + rel + " goes"))


# -- static inspection: parse only, never import ------------------------------------------------------

EXIT_CALLS = {"sys.exit", "os._exit", "exit", "quit", "os.abort", "os.kill", "os.killpg", "_exit"}
FRAMEWORK_MODULES = {"pytest", "_pytest", "pluggy", "py"}
PATCHABLE_MODULES = {"builtins", "__builtins__", "unittest", "pytest", "_pytest", "pluggy", "sys", "os", "importlib", "atexit"}
SYS_HOOKS = {"settrace", "setprofile", "addaudithook", "excepthook", "meta_path", "path_hooks", "modules", "displayhook", "exit"}
OS_HOOKS = {"_exit", "kill", "abort"}
REPORT_MARKERS = ("<testsuite", "<testcase", "junitxml", "--junit")
INTROSPECTION = {"sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes", "gc.get_objects", "gc.get_referrers", "gc.get_referents"}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Subscript):
        inner = _dotted(node.value)
        return inner + "[]" if inner else None
    return None


def _is_main_guard(node):
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


class _Inspector(ast.NodeVisitor):
    def __init__(self, path):
        self.path = path
        self.findings = []
        self.depth = 0  # > 0 inside a function body: code that does not run at import
        self.aliases = {}  # local name -> module it was imported as

    def flag(self, kind, node, evidence):
        self.findings.append({"kind": kind, "path": self.path, "line": getattr(node, "lineno", None), "evidence": evidence})

    def resolve(self, dotted):
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        head = self.aliases.get(head, head)
        return head + ("." + rest if rest else "")

    def visit_If(self, node):
        if self.depth == 0 and _is_main_guard(node):
            self.depth += 1
            self.generic_visit(node)
            self.depth -= 1
        else:
            self.generic_visit(node)

    def _function(self, node):
        for decorator in node.decorator_list:
            self.visit(decorator)
        if node.name.startswith("pytest_"):
            self.flag("pytest-plugin", node, "defines the pytest hook " + node.name + "()")
        self.depth += 1
        for child in node.body:
            self.visit(child)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_Import(self, node):
        for alias in node.names:
            self.aliases[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            self._imported(node, alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = module + "." + alias.name if module else alias.name
        self._imported(node, module)
        self.generic_visit(node)

    def _imported(self, node, module):
        if module.split(".")[0] in FRAMEWORK_MODULES:
            self.flag("monkeypatch", node, "solution code imports the test framework module " + module)
        if module.split(".")[0] == "ctypes":
            self.flag("escape-attempt", node, "solution code imports ctypes (native calls bypass every check)")

    def visit_Call(self, node):
        name = self.resolve(_dotted(node.func))
        if name in EXIT_CALLS and self.depth == 0:
            self.flag("early-exit", node, "calls " + name + "() at import time")
        if name in ("setattr", "delattr") and node.args:
            target = self.resolve(_dotted(node.args[0]))
            if target and target.split(".")[0] in PATCHABLE_MODULES:
                self.flag("monkeypatch", node, name + "() on " + target)
        if name in ("sys.settrace", "sys.setprofile", "threading.settrace", "sys.addaudithook"):
            self.flag("monkeypatch", node, "calls " + name + "()")
        if name in INTROSPECTION:
            self.flag("introspection", node, "calls " + name + "() to look into the caller's frames or objects")
        if name in ("atexit.register",):
            self.flag("fake-report", node, "registers an exit handler that runs after pytest has written its report")
        if name and name.split(".")[0] in ("subprocess",) or name in ("os.system", "os.popen", "os.fork", "os.execv", "os.execl", "os.spawnv", "os.posix_spawn"):
            self.flag("escape-attempt", node, "starts a process with " + name + "()")
        self.generic_visit(node)

    def _assigned(self, target, node):
        dotted = self.resolve(_dotted(target))
        if dotted is None:
            return
        root = dotted.split(".")[0].rstrip("[]")
        if "." in dotted or dotted.endswith("[]"):
            if root in PATCHABLE_MODULES:
                last = dotted.split(".")[-1]
                if root not in ("sys", "os") or last.rstrip("[]") in SYS_HOOKS | OS_HOOKS:
                    self.flag("monkeypatch", node, "assigns " + dotted)
        elif self.depth == 0 and dotted in ("AssertionError", "__import__", "__builtins__", "__build_class__"):
            self.flag("monkeypatch", node, "rebinds " + dotted + " at module level")

    def visit_Assign(self, node):
        for target in node.targets:
            self._assigned(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._assigned(target, node)
        self.generic_visit(node)

    def visit_Raise(self, node):
        if self.depth == 0 and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if self.resolve(_dotted(exc)) == "SystemExit":
                self.flag("early-exit", node, "raises SystemExit at import time")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and any(marker in node.value for marker in REPORT_MARKERS):
            self.flag("fake-report", node, "holds JUnit report text or options: " + repr(node.value[:60]))


def _inspect(paths):
    findings = []
    for rel in paths:
        try:
            with open(os.path.join(WORKSPACE, rel), encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), filename=rel)
        except (SyntaxError, OSError, ValueError, RecursionError, MemoryError):
            continue  # unparsable code cannot be imported either: the run reports it as a collection error
        inspector = _Inspector(_shown(rel))
        inspector.visit(tree)
        findings.extend(inspector.findings)
    return findings


# -- the test run ---------------------------------------------------------------------------------------


class _Tail:
    """Keeps the head and tail of a stream within a byte budget."""

    def __init__(self, cap):
        self.cap, self.head, self.tail, self.dropped = cap, bytearray(), bytearray(), 0

    def push(self, chunk):
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        excess = len(self.tail) - self.cap // 2
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self):
        middle = ("\n[... %d bytes dropped ...]\n" % self.dropped).encode() if self.dropped else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", "replace")


def _drain(stream, sink):
    for chunk in iter(lambda: stream.read(65536), b""):
        sink(chunk)


def _oom_kills():
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as handle:
                for line in handle:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            continue
    return None


def _executor():
    """The in-sandbox executor (agent.py in the image, trusted and read-only): its process-tree kill is the one kill."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("trialrun_executor", JOB["executor"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its main() runs only as __main__
    return module


def _kill_stragglers():
    """Kills what the run left behind, before the report is read: a detached process could otherwise rewrite it.

    This process is a subreaper, so orphans of the test process are its descendants; the executor's sweep kills
    them until none is alive (its own exec watcher does the same once this process exits, too late for the report).
    """
    executor = _executor()
    left = executor.descendants(os.getpid())
    executor.kill_descendants(os.getpid())
    while True:  # reap, so the killed do not linger as zombies
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    return len(left)


def _say(text):
    """A progress line on stderr, which the host reads even when this process is killed before its result."""
    try:
        sys.stderr.write("trialrun-runner: " + text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _run():
    import tempfile

    run_dir = os.path.join(tempfile.gettempdir(), "trialrun-" + JOB["nonce"][:16])
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    report = os.path.join(run_dir, "report.xml")
    ini = os.path.join(run_dir, "pytest.ini")
    with open(ini, "w") as handle:
        # Test modules in subfolders (tests/test_x.py) import the workspace's modules as those at its root do.
        handle.write("[pytest]\npythonpath = " + WORKSPACE + "\n")
    args = list(JOB["tests"]) + ["-q", "-p", "no:cacheprovider", "-c", ini, "--rootdir", WORKSPACE]
    if not JOB["allowConftest"]:
        args.append("--noconftest")
    if JOB["mode"] == "collect":
        args.append("--collect-only")
    else:
        args += ["--junitxml", report, "-o", "junit_family=xunit1"]
    witness_read, witness_write = os.pipe()
    # The witness writes each test's start straight to this process's stderr, before the test runs: if
    # the test kills this process, the host still reads how far the run got.
    progress = os.dup(2)
    config = {
        "witness": JOB["witness"],
        "fd": witness_write,
        "progressFd": progress,
        "args": args,
        "agentFiles": [os.path.join(WORKSPACE, p) for p in WRITTEN],
        "testFiles": [os.path.join(WORKSPACE, p) for p in JOB["taskFiles"]],
        "workspace": WORKSPACE,
        "report": report,
        "strict": JOB["strict"],
        "helper": HELPER,
    }
    boot = (
        "import sys,json\n"
        "c=json.loads(sys.stdin.readline())\n"
        "exec(compile(c.pop('witness'),'<trialrun-witness>','exec'),{'config':c,'__name__':'trialrun_witness'})\n"
    )
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": WORKSPACE, "LANG": "C.UTF-8", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    oom_before = _oom_kills()
    started = time.monotonic()
    parent = os.getpid()
    child = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", boot],
        cwd=WORKSPACE,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(witness_write, progress),
        start_new_session=True,
        preexec_fn=lambda: _die_with_parent(parent),
    )
    os.close(witness_write)
    os.close(progress)
    output, events = _Tail(OUTPUT_CAP), bytearray()

    def witness_sink(chunk):
        if len(events) < WITNESS_CAP:  # a flood from inside the test process must not exhaust memory
            events.extend(chunk[: WITNESS_CAP - len(events)])

    _say("started pytest as pid %d" % child.pid)
    readers = [
        threading.Thread(target=_drain, args=(child.stdout, output.push), daemon=True),
        threading.Thread(target=_drain, args=(os.fdopen(witness_read, "rb"), witness_sink), daemon=True),
    ]
    for reader in readers:
        reader.start()
    child.stdin.write((json.dumps(config) + "\n").encode())
    child.stdin.close()
    timed_out = False
    try:
        child.wait(timeout=JOB["timeoutS"])
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
    duration = time.monotonic() - started
    stragglers = _kill_stragglers() if SUBREAPER else 0
    for reader in readers:
        reader.join(timeout=5)
    oom_after = _oom_kills()
    report_text, report_sha = None, None
    try:
        with open(report, "rb") as handle:
            raw = handle.read(REPORT_CAP + 1)
        report_sha = hashlib.sha256(raw).hexdigest()
        report_text = raw[:REPORT_CAP].decode("utf-8", "replace")
    except OSError:
        pass
    witness, dropped = [], 0
    for line in bytes(events).decode("utf-8", "replace").splitlines():
        if len(witness) >= WITNESS_EVENTS_CAP:
            dropped += 1
            continue
        try:
            # The witness writes short lines; a long one (a forgery) would swell the result past its limit.
            event = json.loads(line) if len(line) <= WITNESS_LINE_CAP else None
            witness.append(event if isinstance(event, dict) else {"event": "garbled", "text": line[:200]})
        except ValueError:
            witness.append({"event": "garbled", "text": line[:200]})
    if dropped:
        witness.append({"event": "flooded", "dropped": dropped})
    code = child.returncode
    return {
        "exitCode": code if code is not None and code >= 0 else None,
        "signal": -code if code is not None and code < 0 else None,
        "timedOut": timed_out,
        "oomKilled": oom_before is not None and oom_after is not None and oom_after > oom_before,
        "durationMs": duration * 1000,
        "report": report_text,
        "reportSha": report_sha,
        "witness": witness,
        "stragglers": stragglers,
        "output": output.text(),
    }


WRITTEN = []
SUBREAPER = False


def _agent_entries():
    """The agent's files as (name, content): UTF-8 names as they came, the others under their real bytes."""
    entries = list(JOB["agentFiles"].items())
    for item in JOB["agentEscapedFiles"]:
        entries.append((os.fsdecode(base64.b64decode(item["name"])), item["content"]))
    return entries


def _strict_tests(files, findings):
    """The task's files with the assertions of its test modules made strict (strict.py)."""
    out = dict(files)
    for rel in JOB["tests"]:
        try:
            out[rel] = STRICT["rewrite_source"](files[rel], HELPER)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            # pytest reports a module that does not parse as a collection error; the run says why it is not strict.
            findings.append({"kind": "strict-rewrite", "path": rel, "line": None, "evidence": type(error).__name__ + ": " + str(error)[:200]})
    return out


def main():
    global SUBREAPER
    result = {"undumpable": _undumpable()}
    SUBREAPER = result["subreaper"] = _subreaper()
    try:
        findings, agent = [], []
        for rel, content in _agent_entries():
            shadow = None if rel in JOB["ownModules"] else _shadowed(rel)
            if shadow is None:
                agent.append((rel, content))
            else:
                findings.append(_finding("shadowed-module", rel, "shadows the installed module " + shadow))
        WRITTEN.extend(_write_agent_files(agent, findings))
        links = [(os.fsdecode(base64.b64decode(l["path"])), os.fsdecode(base64.b64decode(l["target"]))) for l in JOB["agentSymlinks"]]
        protected = {os.path.join(WORKSPACE, rel) for rel in JOB["taskFiles"]}
        WRITTEN.extend(_make_symlinks(links, protected, findings))
        for rel in JOB["taskFiles"]:
            _clear_way(rel, findings)
        for rel, content in _strict_tests(JOB["taskFiles"], findings).items():
            _write_file(rel, content)
        if JOB["mode"] == "setup":
            # Another kind of check runs next, as its own command: the files are all this run is for.
            result["static"] = findings
        else:
            result["static"] = findings + _inspect([p for p in WRITTEN if p.endswith(".py")])
            _say("files written; running pytest")
            result.update(_run())
    except Exception as error:  # the agent's files (too big, odd names) must not crash the verifier
        result["setupError"] = type(error).__name__ + ": " + str(error)[:500]
    _say("done")
    line = json.dumps(result)
    if len(line) > RESULT_CAP:
        result["witness"] = [{"event": "flooded", "dropped": len(result.get("witness", []))}]
        line = json.dumps(result)
    sys.stdout.write("\n" + JOB["nonce"] + line + "\n")
    sys.stdout.flush()


main()
