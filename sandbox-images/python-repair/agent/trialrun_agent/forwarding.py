"""Loopback forwarding: a TCP port on the sandbox's own loopback whose connections travel over the executor's
channel (`listen`, `conn-open`, `conn-data`, `conn-send`, `conn-end`, `conn-close`)."""

import base64
import selectors
import socket

from .system import READ_CHUNK

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
