"""The executor's protocol: one JSON object per line, requests on our stdin, answers and events on our stdout.

agent.py's docstring lists every request, answer and event; this module frames them and words the answers.
"""

import json
import os
import select

# The version in the `ready` event: an executor that speaks another refuses the sandbox.
PROTOCOL = 4


class Refused(Exception):
    """A file request turned down for what it asks (a bad path, a missing file, a full disk): the caller's
    mistake, not a broken sandbox. Answered with `reason`, one word the executor maps to its own error class."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


class RequestLines:
    """Request bytes as they arrive, handed back as whole lines (blank ones skipped)."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b'\n')
            if end < 0:
                return
            line = bytes(self.buffer[:end])
            del self.buffer[:end + 1]
            if line.strip():
                yield line


def write_message(fd, message):
    """Writes `message` as one line to `fd`, whole, waiting while a non-blocking `fd` is full."""
    data = json.dumps(message, separators=(',', ':')).encode() + b'\n'
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])


def ready(pid):
    return {'event': 'ready', 'protocol': PROTOCOL, 'pid': pid}


def answer(request_id, result):
    return {'id': request_id, 'ok': True, 'result': result}


def failed(request_id, error):
    """The answer to a request that failed: a Refused says why in `refused`, any other error by its type and text,
    and text (an exec's failure) as it is."""
    if isinstance(error, str):
        return {'id': request_id, 'ok': False, 'error': error}
    if isinstance(error, Refused):
        return {'id': request_id, 'ok': False, 'error': str(error), 'refused': error.reason}
    return {'id': request_id, 'ok': False, 'error': '%s: %s' % (type(error).__name__, error)}
