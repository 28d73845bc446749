"""Command execution: an exec request run under its own shepherd (cold) or forked from a zygote (warm), its
output kept within bounds, its deadline and cancellation killing its whole subtree."""

import base64
import os
import selectors
import time

from .shepherd import run_shepherd
from .system import READ_CHUNK, kill_descendants, nonblocking, oom_kills
from .zygote import python_command


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
