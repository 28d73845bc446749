"""The shepherd: a subreaper forked for each exec that starts its command and kills whatever it leaves behind.

Whatever the command starts, including processes that setsid() and double-fork, stays in the shepherd's subtree;
it reports the command's pid and exit status on its status pipe (`pid N`, `exit STATUS`, or `fail WHY`).
"""

import errno
import os
import signal

from .system import IGNORED, PR_SET_CHILD_SUBREAPER, close_all_but, find_program, kill_descendants, prctl, volunteer_for_oom_kill


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
