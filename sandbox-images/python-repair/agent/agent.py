"""The trialrun sandbox agent: PID 1 of every sandbox, it runs the executor's commands.

Why it exists: `docker exec` costs several engine round trips per command and degrades badly at 16-20
concurrent calls; a process already running inside the sandbox answers in a few milliseconds, and the
same agent serves both backends (Docker containers and bubblewrap).

Protocol: one JSON object per line. The executor writes requests to our stdin, we answer on stdout.
  -> {"id": 1, "op": "exec", "argv": ["pytest"], "env": {}, "cwd": "/workspace", "timeoutMs": 30000,
      "stdin": "<base64>" or null, "maxOutputBytes": 65536, "preload": ["pytest"] (optional)}
  -> {"id": 2, "op": "cancel", "target": 1}
  -> {"id": 3, "op": "write", "dir": "/workspace", "files": {"a.py": "..."}}
  -> {"id": 4, "op": "read", "dir": "/workspace", "paths": ["a.py"], "maxBytes": 16777216}
  -> {"id": 5, "op": "snapshot", "dir": "/workspace", "maxFileBytes": 1048576, "maxBytes": 67108864,
      "skipDirs": ["__pycache__"]}
  -> {"id": 6, "op": "listen"}                        <- {"id": 6, "ok": true, "result": {"listener": 1, "port": 41234}}
  -> {"id": 7, "op": "conn-send", "conn": 3, "data": "<base64>"}
  -> {"id": 8, "op": "conn-close", "conn": 3}
  <- {"event": "conn-open", "listener": 1, "conn": 3}   <- {"event": "conn-data", "conn": 3, "data": "<base64>"}
  <- {"event": "conn-end", "conn": 3}
  <- {"event": "ready", "protocol": 4, "pid": 1}   (PROTOCOL: an executor that speaks another refuses the sandbox)
  <- {"id": 1, "ok": true, "result": {...}}   or   {"id": 1, "ok": false, "error": "..."}
  <- {"id": 3, "ok": false, "error": "path must be relative to the workspace: /etc/x is absolute", "refused": "bad-path"}

A request refused for what it asks (a bad path, a missing file, a full disk) says so in `refused`, one of
bad-path, bad-content, missing, directory, not-a-file, too-large, not-utf8, no-space, denied, io; any
other failure has none. Request paths are judged in one place, `checked_path`.

Every exec runs under its own shepherd, a child subreaper: whatever the command starts, including
processes that setsid() and double-fork, stays in the shepherd's subtree. When the command exits, times
out or is cancelled, that whole subtree is killed, so nothing an exec starts outlives it.

An exec with `preload` whose argv is `python3 -m module ...` or `python3 script.py ...` is forked from a warm
interpreter (see Zygote) that imported those modules once, instead of starting a fresh python3: on a small
machine `import pytest` costs 0.3 s of CPU, more than the test run it serves. Everything else is the same:
its own process, shepherd, session, pipes, environment and folder, killed with its subtree.

`listen` opens a TCP port on the sandbox's own loopback (the sandbox has no other network); each connection to
it is announced with `conn-open`, its bytes travel as `conn-data` events one way and `conn-send` requests the
other, and either side ends it (`conn-end`, `conn-close`). The executor decides where a connection goes (an
episode's model gateway route): code in the sandbox can reach that one endpoint and nothing else.

Standard library only: the agent must run on any image that has a python3.
"""

import base64
import array
import atexit
import ctypes
import errno
import json
import os
import resource
import runpy
import select
import selectors
import signal
import socket
import stat
import sys
import time

PROTOCOL = 4
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# cgroup v2 exposes memory.events, v1 memory.oom_control; both count OOM kills in the sandbox's cgroup.
# Docker mounts the container's cgroup at the usual places; the process backend says where it bound it.
OOM_FILES = tuple(filter(None, os.environ.get('TRIALRUN_AGENT_OOM_FILES', '').split(':'))) or (
    '/sys/fs/cgroup/memory.events',
    '/sys/fs/cgroup/memory/memory.oom_control',
)
RLIMITS = {'nofile': resource.RLIMIT_NOFILE, 'fsize': resource.RLIMIT_FSIZE, 'nproc': resource.RLIMIT_NPROC}
READ_CHUNK = 65536
# Linux's limits on one name and on a whole path, in bytes.
NAME_MAX = 255
PATH_MAX = 4096
# Folders a snapshot enters below its root; each is opened from the root down, so depth costs time squared.
SNAPSHOT_MAX_DEPTH = 64
KILL_SWEEP_S = 0.02
# Signals the agent ignores; an ignored disposition survives execve, so commands get the defaults back.
IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)
# Warm interpreters kept per sandbox, one per (interpreter, environment, modules); the oldest goes first.
MAX_ZYGOTES = 4
# A warm exec's request to its zygote: argv, environment and folder as JSON, with four descriptors attached.
MAX_ZYGOTE_REQUEST = 1024 * 1024
AGENT_FILE = os.path.abspath(__file__)

_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Capped:
    """Keeps the head and tail of a stream within `limit` bytes, so a flood of output costs bounded memory."""

    def __init__(self, limit):
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def push(self, data):
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self):
        if not self.dropped:
            return bytes(self.head + self.tail).decode('utf-8', 'replace')
        marker = '\n[... %d bytes truncated ...]\n' % self.dropped
        return bytes(self.head).decode('utf-8', 'replace') + marker + bytes(self.tail).decode('utf-8', 'replace')


def oom_kills():
    for path in OOM_FILES:
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(' ')
                    if key == 'oom_kill':
                        return int(value)
        except (OSError, ValueError):
            continue
    return 0


def live_children():
    """Parent pid -> live child pids, from /proc (zombies are left out: they are dead, only unreaped)."""
    kids = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b')') + 2:].split()
        if fields[0] in (b'Z', b'X'):
            continue
        kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def descendants(root, kids=None):
    kids = live_children() if kids is None else kids
    found, stack = [], [root]
    while stack:
        for child in kids.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_descendants(root):
    """SIGKILLs everything below `root` until a sweep finds nothing alive; forks that race a sweep are caught by the next."""
    while True:
        pids = descendants(root)
        if not pids:
            return
        kill_all(pids)


def close_all_but(keep):
    """Closes every descriptor above 2 except `keep` (/proc/self/fd is unreadable once we are not dumpable)."""
    top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = 65536 if top == resource.RLIM_INFINITY else top
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, top)


def find_program(name, env):
    """`name` looked up on the command's own PATH (posix_spawnp would use the agent's)."""
    if '/' in name:
        return name
    for folder in env.get('PATH', os.defpath).split(':'):
        path = os.path.join(folder or '.', name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(2, 'not found on PATH %s' % env.get('PATH', os.defpath))


def volunteer_for_oom_kill():
    """The command (and a zygote, which only holds modules), not the agent, is what the OOM killer should pick."""
    try:
        with open('/proc/self/oom_score_adj', 'w') as f:
            f.write('1000')
    except OSError:
        pass


def prepare_command(cwd):
    """What the shepherd does for its command before starting it: the command inherits both."""
    volunteer_for_oom_kill()
    os.chdir(cwd)


def start_command(argv, env, cwd, stdin_r, stdout_w, stderr_w):
    """Starts the command in a new session with default signals and the pipes as 0/1/2; returns its pid.

    posix_spawn (a vfork underneath) costs a fraction of a second fork of this Python process; what it cannot
    do itself (change folder, raise the OOM score) the shepherd does first, for the command to inherit.
    """
    prepare_command(cwd)
    return os.posix_spawn(
        find_program(argv[0], env),
        argv,
        env,
        file_actions=[(os.POSIX_SPAWN_DUP2, stdin_r, 0), (os.POSIX_SPAWN_DUP2, stdout_w, 1), (os.POSIX_SPAWN_DUP2, stderr_w, 2)],
        setsid=True,
        setsigdef=IGNORED,
    )


def python_command(argv, env):
    """(interpreter, '-m' or 'script', target, args) when argv is `python3 -m module ...` or `python3 file ...`
    and argv[0] is a Python interpreter; None for anything else (other flags, -c, other programs)."""
    if len(argv) < 2:
        return None
    try:
        interpreter = os.path.realpath(find_program(argv[0], env))
    except OSError:
        return None
    if not os.path.basename(interpreter).startswith('python'):
        return None
    if argv[1] == '-m':
        return (interpreter, '-m', argv[2], argv[3:]) if len(argv) > 2 and argv[2] and not argv[2].startswith('-') else None
    if argv[1].startswith('-'):
        return None
    return interpreter, 'script', argv[1], argv[2:]


def run_python(mode, target, args, cwd):
    """In a process forked from a zygote: runs `python3 -m target args` or `python3 target args` as the
    interpreter would, and exits with the code it would exit with."""
    code = 0
    try:
        # sys.path[0] is the zygote's folder; it becomes what python3 puts there (under -P it is not there).
        prepend = not getattr(sys.flags, 'safe_path', False)
        if mode == '-m':
            sys.argv = ['-m'] + list(args)
            if prepend:
                sys.path[0] = cwd
            runpy.run_module(target, run_name='__main__', alter_sys=True)
        else:
            sys.argv = [target] + list(args)
            if prepend:
                sys.path[0] = os.path.dirname(os.path.realpath(target))
            runpy.run_path(target, run_name='__main__')
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: B902 - an uncaught exception ends the command as it ends python3
        sys.excepthook(*sys.exc_info())
        code = 1
    threading = sys.modules.get('threading')
    if threading is not None:
        threading._shutdown()  # non-daemon threads are waited for, as at interpreter exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            code = code or 120
    os._exit(code & 0xFF)


def fork_command(request):
    """The shepherd's start for a warm exec: forks itself (a zygote's child) into the command; returns its pid."""
    mode, target, args = request['mode'], request['target'], request['args']

    def start(argv, env, cwd, stdin_r, stdout_w, stderr_w):
        prepare_command(cwd)
        pid = os.fork()
        if pid:
            return pid
        try:
            os.setsid()
            for fd, target_fd in ((stdin_r, 0), (stdout_w, 1), (stderr_w, 2)):
                os.dup2(fd, target_fd)
            close_all_but(set())
            # As after an execve: the command may be traced and read its own /proc entries; its parents may not.
            prctl(PR_SET_DUMPABLE, 1)
            os.environ.clear()
            os.environ.update(env)
            run_python(mode, target, args, cwd)
        finally:
            os._exit(1)

    return start


def run_shepherd(argv, env, cwd, stdin_r, stdout_w, stderr_w, status_w, start=start_command):
    """In the shepherd: a subreaper that starts the command, reports its pid and exit status, reaps its subtree."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        devnull = os.open('/dev/null', os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        close_all_but({stdin_r, stdout_w, stderr_w, status_w})
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        try:
            pid = start(argv, env, cwd, stdin_r, stdout_w, stderr_w)
        except OSError as error:
            # As a shell would say it: 127 when there is no such program, 126 when it cannot be run.
            os.write(stderr_w, ('trialrun agent: cannot run %s: %s\n' % (argv[0], error)).encode())
            missing = error.errno == errno.ENOENT
            if error.errno in (errno.EAGAIN, errno.ENOMEM):
                os.write(status_w, b'fail cannot start the command: %s\n' % str(error).encode())
            else:
                os.write(status_w, b'pid 0\nexit %d\n' % ((127 if missing else 126) << 8))
            return
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
        os.write(status_w, b'pid %d\n' % pid)
        main_exited = False
        while True:
            try:
                child, status = os.waitpid(-1, os.WNOHANG if main_exited else 0)
            except ChildProcessError:
                break
            if child == pid:
                os.write(status_w, b'exit %d\n' % status)
                main_exited = True
            elif child == 0:
                # The command is done but left processes running (background jobs, daemons): they die with it.
                kill_descendants(os.getpid())
                main_exited = False  # block in waitpid again until the last of them is reaped
    finally:
        os._exit(0)


def nonblocking(fd):
    os.set_blocking(fd, False)
    return fd


class Zygote:
    """A warm interpreter: python3 started once with an exec's environment, having imported `modules`, that
    forks a shepherd (run_shepherd, as the agent's own) for each warm exec sent to it.

    It runs this file with `--zygote` (zygote_main), as our child, in its own session, not dumpable. Requests
    go over a socketpair: JSON with the exec's four pipe ends attached, so the command's output and status reach
    the agent exactly as a cold exec's do; the shepherd first reports `shepherd <pid>`, which the agent needs to
    kill the subtree. Code in the sandbox shares our uid and may kill a zygote: the next warm exec starts another.
    """

    def __init__(self, interpreter, env, modules):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        devnull = os.open('/dev/null', os.O_RDWR)
        try:
            self.pid = os.posix_spawn(
                interpreter,
                [interpreter, AGENT_FILE, '--zygote'] + list(modules),
                env,
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2),
                              (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3)],
                setsid=True,
                setsigdef=IGNORED,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
            os.close(devnull)
        self.socket = ours
        self.alive = True

    def launch(self, command, env, cwd, fds):
        """Sends one warm exec; False when the zygote is gone (the caller starts it cold instead)."""
        interpreter, mode, target, args = command
        message = json.dumps({'argv': [interpreter], 'env': env, 'cwd': cwd, 'mode': mode, 'target': target, 'args': args}).encode()
        if len(message) > MAX_ZYGOTE_REQUEST:
            return False
        try:
            self.socket.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))])
            return True
        except OSError:
            self.stop()
            return False

    def stop(self, reaped=False):
        """Forgets the zygote, killing it unless it is already dead and reaped (its pid may be reused)."""
        if self.alive:
            self.alive = False
            self.socket.close()
            if not reaped:
                kill_all([self.pid])


def zygote_main(modules):
    """The zygote's own loop: import `modules`, then fork a shepherd for each request until the agent hangs up."""
    prctl(PR_SET_DUMPABLE, 0)
    volunteer_for_oom_kill()
    # Shepherds are reaped by the kernel; each sets SIGCHLD back to the default for its command.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for name in modules:
        try:
            __import__(name)
        except Exception:  # noqa: B902 - the command imports it again and reports the failure as python3 would
            pass
    requests = socket.socket(fileno=3)
    fd_space = socket.CMSG_SPACE(4 * array.array('i').itemsize)
    while True:
        message, ancillary, _, _ = requests.recvmsg(MAX_ZYGOTE_REQUEST, fd_space)
        if not message:
            os._exit(0)
        fds = array.array('i')
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        request = json.loads(message)
        if len(fds) == 4:
            try:
                pid = os.fork()
            except OSError:
                pid = -1  # at the pids limit: closing the pipes below tells the agent the command never started
            if pid == 0:
                stdin_r, stdout_w, stderr_w, status_w = fds
                try:
                    os.write(status_w, b'shepherd %d\n' % os.getpid())
                    run_shepherd(request['argv'], request['env'], request['cwd'], stdin_r, stdout_w, stderr_w, status_w, start=fork_command(request))
                finally:
                    os._exit(0)
        for fd in fds:
            os.close(fd)


class Exec:
    def __init__(self, agent, request):
        self.agent = agent
        self.id = request['id']
        argv = request['argv']
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError('argv must be a non-empty list of strings')
        env = dict(agent.base_env)
        env.update(request.get('env') or {})
        cwd = request.get('cwd') or '/workspace'
        preload = request.get('preload') or []
        if not isinstance(preload, list) or not all(isinstance(name, str) and name for name in preload):
            raise ValueError('preload must be a list of module names')
        self.limit = int(request.get('maxOutputBytes') or 65536)
        self.started = time.monotonic()
        self.deadline = self.started + int(request.get('timeoutMs') or 30000) / 1000.0
        self.stdout = Capped(self.limit)
        self.stderr = Capped(self.limit)
        self.open_streams = 2
        self.main_pid = None
        self.main_status = None
        self.shepherd_reaped = False
        self.killed = False  # timed out or cancelled
        self.failure = None
        self.oom_before = oom_kills()
        stdin = request.get('stdin')
        self.pending_stdin = base64.b64decode(stdin) if stdin else b''

        stdin_r, self.stdin_w = os.pipe()
        self.stdout_r, stdout_w = os.pipe()
        self.stderr_r, stderr_w = os.pipe()
        self.status_r, status_w = os.pipe()
        command = python_command(argv, env) if preload else None
        # A warm exec's shepherd is the zygote's child: its pid comes on the status pipe, its end is the pipe's.
        self.zygote = agent.launch_warm(command, env, cwd, preload, (stdin_r, stdout_w, stderr_w, status_w)) if command else None
        self.shepherd = None
        if not self.warm:
            try:
                self.shepherd = os.fork()
            except OSError:
                # At the pids limit (a fork bomb in another exec, say): report it, leak nothing.
                for fd in (stdin_r, self.stdin_w, self.stdout_r, stdout_w, self.stderr_r, stderr_w, self.status_r, status_w):
                    os.close(fd)
                raise
            if self.shepherd == 0:
                run_shepherd(argv, env, cwd, stdin_r, stdout_w, stderr_w, status_w)
        for fd in (stdin_r, stdout_w, stderr_w, status_w):
            os.close(fd)
        self.status_buffer = b''
        sel = agent.selector
        sel.register(nonblocking(self.stdout_r), selectors.EVENT_READ, lambda: self.read_stream('stdout_r', self.stdout))
        sel.register(nonblocking(self.stderr_r), selectors.EVENT_READ, lambda: self.read_stream('stderr_r', self.stderr))
        sel.register(nonblocking(self.status_r), selectors.EVENT_READ, self.read_status)
        if self.pending_stdin:
            sel.register(nonblocking(self.stdin_w), selectors.EVENT_WRITE, self.write_stdin)
        else:
            self.close_stdin()

    @property
    def warm(self):
        return self.zygote is not None

    def write_stdin(self):
        try:
            written = os.write(self.stdin_w, self.pending_stdin[:READ_CHUNK])
            self.pending_stdin = self.pending_stdin[written:]
            if self.pending_stdin:
                return
        except BlockingIOError:
            return
        except OSError:
            pass  # the command exited or closed its stdin without reading it all
        self.close_stdin()

    def close_stdin(self):
        self.close_fd('stdin_w')

    def read_stream(self, name, buffer):
        fd = getattr(self, name)
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        if data:
            buffer.push(data)
            return
        self.close_fd(name)
        self.open_streams -= 1

    def close_fd(self, name):
        """Closes one of our pipe ends and forgets its number, which the next pipe may reuse."""
        fd = getattr(self, name)
        if fd is not None:
            if fd in self.agent.selector.get_map():
                self.agent.selector.unregister(fd)
            os.close(fd)
            setattr(self, name, None)

    def read_status(self):
        data = os.read(self.status_r, 4096)
        if not data:
            self.close_fd('status_r')
            if self.warm:
                self.shepherd_reaped = True
                if self.main_pid is None and self.failure is None and not self.killed:
                    self.failure = 'the warm interpreter could not start the command (at the sandbox\'s process limit, or killed from inside it)'
            return
        self.status_buffer += data
        *lines, self.status_buffer = self.status_buffer.split(b'\n')
        for line in lines:
            kind, _, value = line.partition(b' ')
            if kind == b'shepherd':
                self.shepherd = int(value)
            elif kind == b'pid':
                self.main_pid = int(value)
                if self.main_pid:  # 0: the command could not be started, there is no process
                    self.agent.by_main[self.main_pid] = self
            elif kind == b'exit':
                self.main_exited(int(value))
            elif kind == b'fail':
                self.failure = value.decode('utf-8', 'replace')

    def main_exited(self, status):
        # Whatever the command left running is the shepherd's to kill (it exits once its subtree is empty).
        self.main_status = status

    def kill_tree(self):
        if not self.shepherd_reaped:
            if self.shepherd is not None:
                kill_descendants(self.shepherd)
            elif self.zygote is not None:
                # Its zygote never forked a shepherd for it (stopped from inside the sandbox, say): killing the
                # zygote closes the exec's pipes, which ends it; the next warm exec starts another.
                self.zygote.stop()
        self.agent.kill_strays()

    def expire(self):
        self.killed = True
        self.kill_tree()

    @property
    def finished(self):
        return self.open_streams == 0 and self.shepherd_reaped and (self.main_status is not None or self.killed or self.main_pid is None)

    def result(self):
        status = self.main_status
        if self.killed:
            exit_code = None
        elif status is None:
            exit_code = None
        elif os.WIFSIGNALED(status):
            exit_code = 128 + os.WTERMSIG(status)
        else:
            exit_code = os.WEXITSTATUS(status)
        outcome = 'exited'
        if self.killed:
            outcome = 'timeout'
        elif exit_code != 0 and oom_kills() > self.oom_before:
            outcome = 'oom'
        return {
            'status': outcome,
            'exitCode': exit_code,
            'stdout': self.stdout.text(),
            'stderr': self.stderr.text(),
            'truncated': bool(self.stdout.dropped or self.stderr.dropped),
            'durationMs': (time.monotonic() - self.started) * 1000.0,
        }

    def close(self):
        for name in ('stdin_w', 'stdout_r', 'stderr_r', 'status_r'):
            self.close_fd(name)


# Bytes a forwarded connection may hold unsent towards the sandbox before it is cut (the executor sends
# without waiting; a reader in the sandbox that never reads must not grow the agent without bound).
MAX_CONN_BUFFER = 64 * 1024 * 1024


class Forwarded:
    """One connection to a loopback port of the sandbox, carried over the executor's channel."""

    def __init__(self, agent, conn_id, sock):
        self.agent = agent
        self.id = conn_id
        self.sock = sock
        self.out = bytearray()
        self.closing = False
        self.reading = True
        sock.setblocking(False)
        agent.selector.register(sock, selectors.EVENT_READ, self.on_event)

    def on_event(self):
        # One registration serves both directions: the selector reports readiness, each side tries.
        if self.out:
            self.flush()
        if self.reading and self.id in self.agent.conns:
            self.read()

    def read(self):
        try:
            data = self.sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b''
        if data:
            self.agent.send({'event': 'conn-data', 'conn': self.id, 'data': base64.b64encode(data).decode()})
            return
        self.reading = False
        self.agent.send({'event': 'conn-end', 'conn': self.id})
        self.update()

    def write(self, data):
        if len(self.out) + len(data) > MAX_CONN_BUFFER:
            self.close(tell=True)
            return
        self.out += data
        self.flush()

    def flush(self):
        try:
            while self.out:
                sent = self.sock.send(self.out)
                del self.out[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close(tell=True)
            return
        if not self.out and self.closing:
            self.close()
            return
        self.update()

    def end(self):
        self.closing = True
        self.flush()

    def update(self):
        if self.id not in self.agent.conns:
            return
        events = (selectors.EVENT_READ if self.reading else 0) | (selectors.EVENT_WRITE if self.out else 0)
        registered = self.sock.fileno() in self.agent.selector.get_map()
        if events and registered:
            self.agent.selector.modify(self.sock, events, self.on_event)
        elif events:
            self.agent.selector.register(self.sock, events, self.on_event)
        elif registered:
            self.agent.selector.unregister(self.sock)

    def close(self, tell=False):
        if self.agent.conns.pop(self.id, None) is None:
            return
        if self.sock.fileno() in self.agent.selector.get_map():
            self.agent.selector.unregister(self.sock)
        self.sock.close()
        if tell:
            self.agent.send({'event': 'conn-end', 'conn': self.id})


def listen_loopback(agent):
    """A TCP port on 127.0.0.1 inside the sandbox whose connections are announced to the executor."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    sock.listen(64)
    sock.setblocking(False)
    agent.next_conn += 1
    listener_id = agent.next_conn

    def accept():
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        agent.next_conn += 1
        agent.conns[agent.next_conn] = Forwarded(agent, agent.next_conn, conn)
        agent.send({'event': 'conn-open', 'listener': listener_id, 'conn': agent.next_conn})

    agent.selector.register(sock, selectors.EVENT_READ, accept)
    return {'listener': listener_id, 'port': sock.getsockname()[1]}


class Refused(Exception):
    """A file request turned down for what it asks (a bad path, a missing file, a full disk): the caller's
    mistake, not a broken sandbox. Answered with `reason`, one word the executor maps to its own error class."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def checked_path(root, relative):
    """The real path of `relative` under the real folder `root`, or Refused('bad-path') saying what is wrong.

    The one place where request paths are judged: not a string, empty, a NUL byte, text that is not valid
    Unicode, absolute, a '..' component, a name over NAME_MAX or a path over PATH_MAX bytes, or a path that
    leads out of `root` through a symlink.
    """
    if not isinstance(relative, str):
        raise Refused('bad-path', 'path must be a string, got %s' % type(relative).__name__)
    if relative == '':
        raise Refused('bad-path', 'path must not be empty')
    if '\0' in relative:
        raise Refused('bad-path', 'path must not contain a NUL byte: %r' % relative)
    try:
        encoded = relative.encode('utf-8')
    except UnicodeEncodeError:
        raise Refused('bad-path', 'path is not valid Unicode text: %r' % relative) from None
    if relative.startswith('/'):
        raise Refused('bad-path', 'path must be relative to the workspace: %s is absolute' % relative)
    parts = encoded.split(b'/')
    if b'..' in parts:
        raise Refused('bad-path', "path must stay inside the workspace: %s resolves outside %s (it goes up with '..')" % (relative, root))
    longest = max(parts, key=len)
    if len(longest) > NAME_MAX:
        raise Refused('bad-path', 'path has a name of %d bytes, over the %d-byte limit of a file name: %s...' % (len(longest), NAME_MAX, relative[:80]))
    full = len(os.path.join(root, relative).encode('utf-8'))
    if full >= PATH_MAX:
        raise Refused('bad-path', 'path is %d bytes under %s, over the %d-byte limit of a path: %s...' % (full, root, PATH_MAX, relative[:80]))
    path = os.path.realpath(os.path.join(root, relative))
    if path != root and not path.startswith(root + os.sep):
        raise Refused('bad-path', 'path must stay inside the workspace: %s resolves outside %s through a symlink (to %s)' % (relative, root, path))
    return path


def refusal(error, relative):
    """An OSError met while serving `relative`, as the Refused the caller can act on."""
    code = error.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return Refused('missing', 'no such file: %s' % relative)
    if code == errno.EISDIR:
        return Refused('directory', '%s is a directory, not a file' % relative)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return Refused('no-space', 'no space left in the sandbox for %s (its size or file-count limit)' % relative)
    if code == errno.EFBIG:
        return Refused('no-space', '%s would be over the sandbox\'s file size limit' % relative)
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return Refused('denied', 'permission denied: %s' % relative)
    if code == errno.EEXIST:
        return Refused('not-a-file', 'cannot create a folder on the way to %s: a file of that name is in the way' % relative)
    return Refused('io', 'cannot use %s: %s' % (relative, os.strerror(code) if code else error))


def write_files(request):
    root = os.path.realpath(request['dir'])
    files = request['files']
    if not isinstance(files, dict):
        raise ValueError('files must be an object of path -> text')
    planned = []
    # Everything is checked before anything is written, so a refused request changes nothing.
    for relative, content in files.items():
        path = checked_path(root, relative)
        if path == root:
            raise Refused('directory', '%s is the folder itself, not a file' % relative)
        if not isinstance(content, str):
            raise Refused('bad-content', 'content of %s must be text, got %s' % (relative, type(content).__name__))
        try:
            planned.append((relative, path, content.encode('utf-8')))
        except UnicodeEncodeError:
            raise Refused('not-utf8', 'content of %s is not valid Unicode text' % relative) from None
    for relative, path, data in planned:
        # Written beside and renamed into place: a write that fails (a full disk) leaves the old file as it was.
        staged = os.path.join(os.path.dirname(path), '.trialrun-write-%s' % os.urandom(6).hex())
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(staged, 'wb') as f:
                f.write(data)
            os.replace(staged, path)
        except OSError as error:
            try:
                os.unlink(staged)
            except OSError:
                pass
            raise refusal(error, relative) from None
    return {}


def read_regular(path, relative, limit, dir_fd=None):
    """The bytes of a regular file, refusing anything else (a fifo would block, a device never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as error:
        raise refusal(error, relative) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused('directory', '%s is a directory, not a file' % relative)
        if not stat.S_ISREG(info.st_mode):
            raise Refused('not-a-file', '%s is not a regular file' % relative)
        if info.st_size > limit:
            raise Refused('too-large', '%s is %d bytes, over the %d bytes one read may take' % (relative, info.st_size, limit))
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(READ_CHUNK * 16, limit + 1 - size))
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while we read it
                raise Refused('too-large', '%s is over the %d bytes one read may take' % (relative, limit))
    except OSError as error:
        raise refusal(error, relative) from None
    finally:
        os.close(fd)


def read_files(request):
    root = os.path.realpath(request['dir'])
    budget = int(request.get('maxBytes') or 16 * 1024 * 1024)
    paths = request['paths']
    if not isinstance(paths, list):
        raise ValueError('paths must be a list')
    checked = [(relative, checked_path(root, relative)) for relative in paths]
    files = {}
    for relative, path in checked:
        data = read_regular(path, relative, budget)
        budget -= len(data)
        try:
            files[relative] = data.decode('utf-8')
        except UnicodeDecodeError as error:
            raise Refused('not-utf8', '%s is not UTF-8 text (byte %d is 0x%02x)' % (relative, error.start, data[error.start])) from None
    return {'files': files}


def open_folder(root_fd, parts):
    """A descriptor to list the folder `parts` below `root_fd`, opened one name at a time without following
    symlinks: at most two descriptors are open at once, and no path string ever gets near PATH_MAX."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            child = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
        # Only the folder to list needs read permission; the way to it needs search permission alone.
        listable = os.open('.', os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    return listable


def snapshot(request):
    """Every entry below `dir`, names as raw bytes (base64), never following a symlink.

    Regular files up to `maxFileBytes` come with their text (UTF-8, undecodable bytes replaced); symlinks with
    their target; anything else, or what does not fit `maxBytes` in all, is listed in `skipped` with the reason.
    Folders named in `skipDirs` are not entered, nor folders more than SNAPSHOT_MAX_DEPTH deep.
    """
    # O_PATH: a root the agent made unreadable (chmod 000) is reported as skipped, like any other folder.
    root_fd = os.open(request['dir'], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    max_file = int(request.get('maxFileBytes') or 1024 * 1024)
    budget = int(request.get('maxBytes') or 64 * 1024 * 1024)
    skip_dirs = {os.fsencode(name) for name in request.get('skipDirs') or []}
    b64 = lambda data: base64.b64encode(data).decode('ascii')  # noqa: E731
    files, symlinks, skipped = [], [], []
    pending = [[]]
    try:
        while pending:
            parts = pending.pop()
            try:
                fd = open_folder(root_fd, parts)
            except OSError as error:
                skipped.append({'path': b64(b'/'.join(parts)), 'reason': 'unreadable folder: %s' % os.strerror(error.errno)})
                continue
            try:
                with os.scandir(fd) as entries:
                    listed = [(os.fsencode(entry.name), entry.is_dir(follow_symlinks=False), entry.is_symlink(), entry.is_file(follow_symlinks=False)) for entry in entries]
                for name, is_dir, is_link, is_file in sorted(listed):
                    relative = b'/'.join(parts + [name])
                    budget -= len(relative)
                    if budget < 0:
                        skipped.append({'path': b64(relative), 'reason': 'over the snapshot\'s byte budget'})
                    elif is_dir:
                        if len(parts) + 1 > SNAPSHOT_MAX_DEPTH:
                            skipped.append({'path': b64(relative), 'reason': 'nested more than %d folders deep' % SNAPSHOT_MAX_DEPTH})
                        elif name not in skip_dirs:
                            pending.append(parts + [name])
                    elif is_link:
                        target = os.fsencode(os.readlink(name, dir_fd=fd))
                        budget -= len(target)
                        symlinks.append({'path': b64(relative), 'target': b64(target)})
                    elif is_file:
                        try:
                            data = read_regular(name, os.fsdecode(relative), min(max_file, max(budget, 0)), dir_fd=fd)
                        except Refused as error:
                            skipped.append({'path': b64(relative), 'reason': str(error)})
                            continue
                        budget -= len(data)
                        files.append({'path': b64(relative), 'text': data.decode('utf-8', 'replace')})
                    else:
                        skipped.append({'path': b64(relative), 'reason': 'not a regular file, folder or symlink'})
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return {'files': files, 'symlinks': symlinks, 'skipped': skipped}


class Agent:
    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.execs = {}
        self.by_shepherd = {}
        self.by_main = {}
        self.zygotes = {}
        self.conns = {}
        self.next_conn = 0
        self.requests = bytearray()
        self.input_closed = False
        self.base_env = {k: v for k, v in os.environ.items() if not k.startswith('TRIALRUN_AGENT_')}
        wake_r, wake_w = os.pipe()
        signal.set_wakeup_fd(nonblocking(wake_w))
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector.register(nonblocking(wake_r), selectors.EVENT_READ, lambda: self.drain(wake_r))
        self.selector.register(nonblocking(0), selectors.EVENT_READ, self.read_requests)

    @staticmethod
    def drain(fd):
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass

    def send(self, message):
        data = json.dumps(message, separators=(',', ':')).encode() + b'\n'
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(1, view):]
            except BlockingIOError:
                select.select([], [1], [])

    def close_input(self):
        if not self.input_closed:
            self.input_closed = True
            if 0 in self.selector.get_map():
                self.selector.unregister(0)
            for ex in list(self.execs.values()):
                ex.expire()

    def read_requests(self):
        try:
            data = os.read(0, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.close_input()
            return
        self.requests += data
        while True:
            end = self.requests.find(b'\n')
            if end < 0:
                return
            line = bytes(self.requests[:end])
            del self.requests[:end + 1]
            if line.strip():
                self.handle(line)

    def handle(self, line):
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get('id')
            op = request.get('op')
            if op == 'exec':
                ex = Exec(self, request)
                self.execs[ex.id] = ex
                if not ex.warm:
                    self.by_shepherd[ex.shepherd] = ex
                return
            if op == 'cancel':
                target = self.execs.get(request.get('target'))
                if target is not None:
                    target.expire()
                result = {'cancelled': target is not None}
            elif op == 'write':
                result = write_files(request)
            elif op == 'read':
                result = read_files(request)
            elif op == 'snapshot':
                result = snapshot(request)
            elif op == 'listen':
                result = listen_loopback(self)
            elif op in ('conn-send', 'conn-close'):
                conn = self.conns.get(request.get('conn'))
                if conn is not None and op == 'conn-send':
                    conn.write(base64.b64decode(request.get('data', '')))
                elif conn is not None:
                    conn.end()
                result = {'open': conn is not None}
            else:
                raise ValueError('unknown op %r' % (op,))
            self.send({'id': request_id, 'ok': True, 'result': result})
        except Refused as error:
            self.send({'id': request_id, 'ok': False, 'error': str(error), 'refused': error.reason})
        except Exception as error:  # noqa: B902 - every failure is reported to the executor, never fatal to the agent
            self.send({'id': request_id, 'ok': False, 'error': '%s: %s' % (type(error).__name__, error)})

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ex = self.by_shepherd.pop(pid, None)
            if ex is not None:
                ex.shepherd_reaped = True
                if os.WIFSIGNALED(status):
                    # Killed from inside the sandbox: its subtree was reparented to us.
                    self.kill_strays()
                continue
            ex = self.by_main.pop(pid, None)
            if ex is not None and ex.main_status is None:
                # Its shepherd was killed from inside the sandbox, so the command was reparented to us.
                ex.main_exited(status)
                continue
            for key, zygote in list(self.zygotes.items()):
                if zygote.pid == pid:
                    zygote.stop(reaped=True)
                    del self.zygotes[key]

    def launch_warm(self, command, env, cwd, preload, fds):
        """Hands an exec to the zygote for its interpreter, environment and modules, starting one if there is
        none or it died; returns that zygote, or None when none can take it (the exec then starts cold)."""
        key = (command[0], tuple(sorted(env.items())), tuple(preload))
        for _ in range(2):
            zygote = self.zygotes.get(key)
            if zygote is None or not zygote.alive:
                self.zygotes.pop(key, None)
                if len(self.zygotes) >= MAX_ZYGOTES:
                    self.zygotes.pop(next(iter(self.zygotes))).stop()
                try:
                    zygote = self.zygotes[key] = Zygote(command[0], env, preload)
                except OSError:
                    return None
            if zygote.launch(command, env, cwd, fds):
                return zygote
        return None

    def kill_strays(self):
        """Kills our direct children that are not shepherds: leftovers of an exec whose shepherd was killed."""
        kids = live_children().get(os.getpid(), [])
        zygotes = {zygote.pid for zygote in self.zygotes.values()}
        strays = [pid for pid in kids if pid not in self.by_shepherd and pid not in zygotes]
        for pid in strays:
            kill_all(descendants(pid) + [pid])

    def run(self):
        self.send({'event': 'ready', 'protocol': PROTOCOL, 'pid': os.getpid()})
        while not (self.input_closed and not self.execs):
            now = time.monotonic()
            deadlines = [ex.deadline for ex in self.execs.values() if not ex.killed]
            # A killed exec is swept again until it is done: its shepherd may fork the command after a sweep.
            if any(ex.killed for ex in self.execs.values()):
                deadlines.append(now + KILL_SWEEP_S)
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            for key, _ in self.selector.select(timeout):
                key.data()
            self.reap()
            now = time.monotonic()
            for ex in list(self.execs.values()):
                if ex.killed or now >= ex.deadline:
                    ex.expire()
                if ex.finished:
                    del self.execs[ex.id]
                    self.by_main.pop(ex.main_pid, None)
                    ex.close()
                    if self.input_closed:
                        continue
                    if ex.failure is not None:
                        self.send({'id': ex.id, 'ok': False, 'error': ex.failure})
                    else:
                        self.send({'id': ex.id, 'ok': True, 'result': ex.result()})


def main(args):
    for arg in args:
        name, _, value = arg.partition('=')
        if not name.startswith('--rlimit-') or name[len('--rlimit-'):] not in RLIMITS:
            sys.exit('trialrun agent: unknown argument %s (expected --rlimit-{%s}=N)' % (arg, ','.join(RLIMITS)))
        limit = int(value)
        resource.setrlimit(RLIMITS[name[len('--rlimit-'):]], (limit, limit))
    for sig in IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    # No handler for SIGINT (Python installs one) or SIGTERM: PID 1 of a pid namespace only receives the
    # signals it handles, so code in the sandbox cannot stop us. The executor ends a sandbox with SIGKILL.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Code in the sandbox runs as our uid: being undumpable keeps it from ptrace-ing us or reading our /proc entries.
    prctl(PR_SET_DUMPABLE, 0)
    # Orphans of an exec go to its shepherd; anything that still escapes comes to us rather than to a host init.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    Agent().run()


if __name__ == '__main__':
    if sys.argv[1:2] == ['--zygote']:
        zygote_main(sys.argv[2:])
    else:
        main(sys.argv[1:])
