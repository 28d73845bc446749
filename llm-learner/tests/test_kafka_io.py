"""The registry client must not wait for ever on a registry that accepts a connection and never answers."""

import socket
import threading
import time

import pytest

from trialrun_llm_learner import kafka_io


@pytest.fixture
def silent_registry():
    """A listening socket that accepts connections and never writes a byte back."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_registry_that_never_answers_fails_the_encode_instead_of_hanging(silent_registry, monkeypatch):
    monkeypatch.setattr(kafka_io, "REGISTRY_TIMEOUT_S", 0.2)
    codec = kafka_io.TopicCodec(silent_registry, {"policyCheckpoints": "t.policy-checkpoints"})
    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        codec.encode("policyCheckpoints", {"version": 1})
    assert "timed out" in str(raised.value).lower() or "timeout" in type(raised.value).__name__.lower()
    # Every try (the client's max.retries after the first) ends at the timeout.
    assert time.monotonic() - started < 30
