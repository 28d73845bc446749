"""The learner's end of the checkpoint channel (store_channel.py) over a real socket pair. The launcher's end is
connectors/checkpoints/channel.ts, tested with it against S3 in test/integration/llm-checkpoints-s3.test.ts; here
the other end of the socket answers as the launcher's protocol says, so the retry rules are checked without S3."""

import json
import socket
import threading

import pytest

from trialrun_llm_learner.checkpoint import sha256_hex
from trialrun_llm_learner.options import OptionsError, parse_args
from trialrun_llm_learner.store_channel import ChannelError, FolderCheckpoints, LauncherCheckpoints, open_checkpoints


def launcher(replies):
    """A socket pair: the learner's end, and a thread that answers each request with the next of `replies` (a function of the request)."""
    learner_end, launcher_end = socket.socketpair()
    requests = []

    def answer():
        stream = launcher_end.makefile("rwb")
        for reply in replies:
            line = stream.readline()
            if not line:
                return
            request = json.loads(line)
            requests.append(request)
            stream.write(json.dumps({"id": request["id"], **reply(request)}).encode() + b"\n")
            stream.flush()
        stream.close()
        launcher_end.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return learner_end.detach(), requests, thread


def published(request):
    return {"artifact": {"uri": f"s3://b/p/{request['policyId']}/v{request['version']}-{request['sha256']}.bin", "sha256": request["sha256"], "bytes": 1, "format": request["format"]}}


def unreachable(request):
    return {"error": {"name": "ConnectionError", "message": "s3 does not answer", "retriable": True}}


def test_a_put_goes_through_the_launcher_after_retriable_failures_and_leaves_no_scratch_file():
    fd, requests, thread = launcher([unreachable, unreachable, published])
    said, slept = [], []
    store = LauncherCheckpoints("s3://b/p", fd, said.append, lambda: False, sleep=slept.append)
    try:
        artifact = store.put("llm", 3, b"adapter", "lora-safetensors/v1")
        assert artifact["uri"] == f"s3://b/p/llm/v3-{sha256_hex(b'adapter')}.bin"
        assert [r["op"] for r in requests] == ["put"] * 3 and len({r["id"] for r in requests}) == 3
        assert slept == [1.0, 2.0] and all("trying again" in line for line in said)
        assert not any(path.is_file() for path in store.scratch.rglob("*")), "the scratch copy is removed once published"
    finally:
        store.close()
        thread.join(5)
    assert not store.scratch.exists()


def test_a_refusal_is_raised_at_once_and_a_retriable_failure_too_once_the_learner_is_stopping():
    refused = lambda request: {"error": {"name": "BlobNotFoundError", "message": "s3://b/p/llm/v1.bin is not in the store", "retriable": False}}  # noqa: E731
    fd, requests, thread = launcher([refused, unreachable])
    stopping = [False]
    store = LauncherCheckpoints("s3://b/p", fd, lambda line: None, lambda: stopping[0], sleep=lambda s: None)
    try:
        with pytest.raises(ChannelError, match="BlobNotFoundError: .* is not in the store") as error:
            store.read("s3://b/p/llm/v1.bin", "0" * 64)
        assert not error.value.retriable
        stopping[0] = True
        with pytest.raises(ChannelError, match="ConnectionError") as error:
            store.put("llm", 1, b"adapter", None)
        assert error.value.retriable and len(requests) == 2
        with pytest.raises(ChannelError, match="ChannelClosed"):
            store.put("llm", 1, b"adapter", None)
    finally:
        store.close()
        thread.join(5)


def test_bytes_read_back_are_checked_here_too():
    def wrong_bytes(request):
        with open(request["path"], "wb") as handle:
            handle.write(b"not what the record names")
        return {"path": request["path"]}

    fd, _, thread = launcher([wrong_bytes])
    store = LauncherCheckpoints("s3://b/p", fd, lambda line: None, lambda: False)
    try:
        with pytest.raises(Exception, match="fails its sha256 check"):
            store.read("s3://b/p/llm/v1.bin", sha256_hex(b"adapter"))
    finally:
        store.close()
        thread.join(5)


def test_a_local_folder_is_written_by_the_learner_and_an_s3_store_needs_the_launcher(tmp_path):
    store = open_checkpoints(str(tmp_path), 0, lambda line: None, lambda: False)
    assert isinstance(store, FolderCheckpoints)
    artifact = store.put("llm-learner-state", 2, b"state", None, ".optimizer.pt")
    assert artifact["uri"].endswith(f"/llm-learner-state/v2-{sha256_hex(b'state')}.optimizer.pt")
    assert store.read(artifact["uri"], artifact["sha256"]) == b"state"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"gguf")
    with pytest.raises(OptionsError, match="not a local folder; the learner publishes there only through its launcher"):
        parse_args(["--gguf", str(gguf), "--checkpoints", "s3://b/p"])
    assert parse_args(["--gguf", str(gguf), "--checkpoints", "s3://b/p", "--checkpoint-channel-fd", "3"]).checkpoint_channel_fd == 3
    with pytest.raises(OptionsError, match="checkpoint_channel_fd must be 0"):
        parse_args(["--gguf", str(gguf), "--checkpoints", str(tmp_path), "--checkpoint-channel-fd", "1"])
