"""What the agent asks of the kernel: process flags, the process tree under /proc, OOM counts, descriptors."""

import ctypes
import os
import resource
import signal

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# cgroup v2 exposes memory.events, v1 memory.oom_control; both count OOM kills in the sandbox's cgroup.
# Docker mounts the container's cgroup at the usual places; the process backend says where it bound it.
OOM_FILES = tuple(filter(None, os.environ.get('TRIALRUN_AGENT_OOM_FILES', '').split(':'))) or (
    '/sys/fs/cgroup/memory.events',
    '/sys/fs/cgroup/memory/memory.oom_control',
)
READ_CHUNK = 65536
# Signals the agent ignores; an ignored disposition survives execve, so commands get the defaults back.
IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)

_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


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


def nonblocking(fd):
    os.set_blocking(fd, False)
    return fd
