"""The agent itself: PID 1 of the sandbox, one select loop that reads requests, runs them, and reaps children."""

import base64
import json
import os
import resource
import selectors
import signal
import sys
import time

from . import protocol
from .commands import Exec
from .files import read_files, snapshot, write_files
from .forwarding import listen_loopback
from .system import IGNORED, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, READ_CHUNK, descendants, kill_all, live_children, nonblocking, prctl
from .zygote import MAX_ZYGOTES, Zygote

RLIMITS = {'nofile': resource.RLIMIT_NOFILE, 'fsize': resource.RLIMIT_FSIZE, 'nproc': resource.RLIMIT_NPROC}
KILL_SWEEP_S = 0.02


class Agent:
    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.execs = {}
        self.by_shepherd = {}
        self.by_main = {}
        self.zygotes = {}
        self.conns = {}
        self.next_conn = 0
        self.requests = protocol.RequestLines()
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
        protocol.write_message(1, message)

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
        for line in self.requests.feed(data):
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
            self.send(protocol.answer(request_id, result))
        except Exception as error:  # noqa: B902 - every failure is reported to the executor, never fatal to the agent
            self.send(protocol.failed(request_id, error))

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
        self.send(protocol.ready(os.getpid()))
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
                        self.send(protocol.failed(ex.id, ex.failure))
                    else:
                        self.send(protocol.answer(ex.id, ex.result()))


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
