"""The learner's checkpoint store: a local folder it writes itself, or its launcher's store over the checkpoint channel.

With a checkpoint store that is not a local folder (TRIALRUN_CHECKPOINTS=s3://...), `trialrun run llm-learner` (and
`learn`, `demo`) hands the learner one end of a socket (--checkpoint-channel-fd). The learner writes each artifact to
a scratch folder of its own, and the launcher publishes it through the project's one checkpoint store
(connectors/checkpoints/channel.ts: one key rule, one S3 client, a conditional create per version, the sha256 checked
on every read) and answers with the artifact record, whose URI the checkpoint record then carries. Reading back
(a restarted learner restoring its adapter and optimizer state) goes the same way. The learner holds no S3 client.

Only the standard library and checkpoint.py's store functions: this module loads without torch.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from .checkpoint import ArtifactIntegrityError, put_bytes, read_verified

#: The longest wait between two tries of a request the launcher answered with a retriable error (S3 not answering).
MAX_RETRY_DELAY_S = 5.0


class ChannelError(RuntimeError):
    """The launcher could not carry out a request: `name` and `retriable` are those of its error (schemas/errors.ts)."""

    def __init__(self, name: str, message: str, retriable: bool):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.retriable = retriable


class Checkpoints(Protocol):
    """Where the learner's artifacts and optimizer state go, and are read back from."""

    #: The store, for log lines: a folder, or the launcher's s3:// location.
    location: str

    def put(self, folder: str, version: int, data: bytes, format: Optional[str], suffix: str = ".bin") -> dict[str, Any]:
        """Stores `data` as version `version` under `folder`; returns the CheckpointArtifact record (uri, sha256, bytes, format)."""
        ...

    def read(self, uri: str, sha256: str) -> bytes:
        """The bytes of an artifact record, checked against `sha256`."""
        ...

    def close(self) -> None: ...


class FolderCheckpoints:
    """The checkpoint store as a local folder, written by the learner itself (checkpoint.py's layout)."""

    def __init__(self, root: str):
        self.location = root

    def put(self, folder: str, version: int, data: bytes, format: Optional[str], suffix: str = ".bin") -> dict[str, Any]:
        path, sha256 = put_bytes(self.location, folder, version, data, suffix)
        return {"uri": path.as_uri(), "sha256": sha256, "bytes": len(data), "format": format}

    def read(self, uri: str, sha256: str) -> bytes:
        return read_verified(uri, sha256)

    def close(self) -> None:
        pass


class LauncherCheckpoints:
    """
    The launcher's checkpoint store, over the socket on `fd`. Each artifact is written whole to a scratch file (the
    folder is the learner's own, removed on close), published by the launcher, and the scratch file removed. A request
    the launcher answers with a retriable error (S3 not answering past the store's own retries) is tried again, 1 s then
    up to MAX_RETRY_DELAY_S apart, until it succeeds or `should_stop` says the learner is stopping: nothing is committed
    meanwhile, so an outage delays a version and loses nothing. Any other error is raised.
    """

    def __init__(self, location: str, fd: int, log: Callable[[str], None], should_stop: Callable[[], bool], sleep: Callable[[float], None] = time.sleep):
        self.location = location
        self.log = log
        self.should_stop = should_stop
        self.sleep = sleep
        self.channel = socket.socket(fileno=fd)
        self.stream = self.channel.makefile("rwb")
        self.scratch = Path(tempfile.mkdtemp(prefix="trialrun-llm-learner-"))
        self.next_id = 0

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        try:
            self.stream.write(json.dumps({"id": self.next_id, **request}).encode() + b"\n")
            self.stream.flush()
            line = self.stream.readline()
        except OSError as error:
            raise ChannelError("ChannelClosed", f"the checkpoint channel to {self.location} broke ({error})", False) from error
        if not line:
            raise ChannelError("ChannelClosed", f"the launcher closed the checkpoint channel to {self.location}", False)
        reply = json.loads(line)
        if reply.get("id") != self.next_id:
            raise ChannelError("ChannelProtocolError", f"the launcher answered request {reply.get('id')}, not {self.next_id}", False)
        error = reply.get("error")
        if error is not None:
            raise ChannelError(str(error.get("name")), str(error.get("message")), bool(error.get("retriable")))
        return reply

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        delay = 1.0
        while True:
            try:
                return self._ask(request)
            except ChannelError as error:
                if not error.retriable or self.should_stop():
                    raise
                self.log(f"{request['op']} through the launcher's checkpoint store {self.location} failed ({error}); trying again in {delay:.0f} s")
                self.sleep(delay)
                delay = min(delay * 2, MAX_RETRY_DELAY_S)

    def put(self, folder: str, version: int, data: bytes, format: Optional[str], suffix: str = ".bin") -> dict[str, Any]:
        path, sha256 = put_bytes(str(self.scratch), folder, version, data, suffix)
        try:
            artifact = self._request({"op": "put", "policyId": folder, "version": version, "path": str(path), "sha256": sha256, "format": format})["artifact"]
        finally:
            path.unlink(missing_ok=True)
        if artifact.get("sha256") != sha256:
            raise ArtifactIntegrityError(f"the launcher published v{version} of {folder} as {artifact.get('uri')} with sha256 {artifact.get('sha256')}, not {sha256}")
        return artifact

    def read(self, uri: str, sha256: str) -> bytes:
        path = self.scratch / f"read-{sha256}"
        try:
            self._request({"op": "get", "uri": uri, "sha256": sha256, "path": str(path)})
            # Checked again here: what the learner loads is what the record names, whoever wrote the scratch file.
            return read_verified(path.as_uri(), sha256)
        finally:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass  # a launcher already gone: what was not sent has no reader
        self.channel.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def open_checkpoints(location: str, channel_fd: int, log: Callable[[str], None], should_stop: Callable[[], bool]) -> Checkpoints:
    """The launcher's store when it handed the learner a channel (`channel_fd` > 0), else the local folder `location`."""
    if channel_fd:
        return LauncherCheckpoints(location, channel_fd, log, should_stop)
    return FolderCheckpoints(location)
