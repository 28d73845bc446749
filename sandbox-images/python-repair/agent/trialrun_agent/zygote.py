"""Warm interpreters: an exec of `python3 -m module ...` or `python3 script.py ...` with `preload` is forked
from a python3 that imported those modules once, instead of starting a fresh one."""

import array
import atexit
import json
import os
import runpy
import signal
import socket
import sys

from .shepherd import prepare_command, run_shepherd
from .system import IGNORED, PR_SET_DUMPABLE, close_all_but, find_program, kill_all, prctl, volunteer_for_oom_kill

# Warm interpreters kept per sandbox, one per (interpreter, environment, modules); the oldest goes first.
MAX_ZYGOTES = 4
# A warm exec's request to its zygote: argv, environment and folder as JSON, with four descriptors attached.
MAX_ZYGOTE_REQUEST = 1024 * 1024
# The executor's entry point (agent.py, beside this package), which a zygote runs with `--zygote`.
AGENT_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'agent.py')


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
