"""The trialrun sandbox agent: PID 1 of every sandbox, it runs the executor's commands.

Why it exists: `docker exec` costs several engine round trips per command and degrades badly at 16-20
concurrent calls; a process already running inside the sandbox answers in a few milliseconds, and the
same agent serves both backends (Docker containers and bubblewrap).

Protocol: one JSON object per line. The executor writes requests to our stdin, we answer on stdout.
  -> {"id": 1, "op": "exec", "argv": ["pytest"], "env": {}, "cwd": "/workspace", "timeoutMs": 30000,
      "stdin": "<base64>" or null, "maxOutputBytes": 65536, "preload": ["pytest"] (optional)}
  -> {"id": 2, "op": "cancel", "target": 1}
  -> {"id": 3, "op": "write", "dir": "/workspace", "files": {"a.py": "..."}}
  -> {"id": 4, "op": "read", "dir": "/workspace", "paths": ["a.py"], "maxBytes": 16777216}
  -> {"id": 5, "op": "snapshot", "dir": "/workspace", "maxFileBytes": 1048576, "maxBytes": 67108864,
      "skipDirs": ["__pycache__"]}
  -> {"id": 6, "op": "listen"}                        <- {"id": 6, "ok": true, "result": {"listener": 1, "port": 41234}}
  -> {"id": 7, "op": "conn-send", "conn": 3, "data": "<base64>"}
  -> {"id": 8, "op": "conn-close", "conn": 3}
  <- {"event": "conn-open", "listener": 1, "conn": 3}   <- {"event": "conn-data", "conn": 3, "data": "<base64>"}
  <- {"event": "conn-end", "conn": 3}
  <- {"event": "ready", "protocol": 4, "pid": 1}   (PROTOCOL: an executor that speaks another refuses the sandbox)
  <- {"id": 1, "ok": true, "result": {...}}   or   {"id": 1, "ok": false, "error": "..."}
  <- {"id": 3, "ok": false, "error": "path must be relative to the workspace: /etc/x is absolute", "refused": "bad-path"}

A request refused for what it asks (a bad path, a missing file, a full disk) says so in `refused`, one of
bad-path, bad-content, missing, directory, not-a-file, too-large, not-utf8, no-space, denied, io; any
other failure has none. Request paths are judged in one place, `checked_path` (trialrun_agent/files.py).

Every exec runs under its own shepherd, a child subreaper: whatever the command starts, including
processes that setsid() and double-fork, stays in the shepherd's subtree. When the command exits, times
out or is cancelled, that whole subtree is killed, so nothing an exec starts outlives it.

An exec with `preload` whose argv is `python3 -m module ...` or `python3 script.py ...` is forked from a warm
interpreter (see Zygote) that imported those modules once, instead of starting a fresh python3: on a small
machine `import pytest` costs 0.3 s of CPU, more than the test run it serves. Everything else is the same:
its own process, shepherd, session, pipes, environment and folder, killed with its subtree.

`listen` opens a TCP port on the sandbox's own loopback (the sandbox has no other network); each connection to
it is announced with `conn-open`, its bytes travel as `conn-data` events one way and `conn-send` requests the
other, and either side ends it (`conn-end`, `conn-close`). The executor decides where a connection goes (an
episode's model gateway route): code in the sandbox can reach that one endpoint and nothing else.

Standard library only: the agent must run on any image that has a python3.

This file is the entry point; the agent is the package beside it, one module per concern:
  trialrun_agent/protocol.py    the framing above, PROTOCOL, the answers and Refused
  trialrun_agent/loop.py        the agent: its select loop, request dispatch, reaping, and main()
  trialrun_agent/commands.py    exec: output within bounds, deadlines, cancellation
  trialrun_agent/shepherd.py    the subreaper each exec runs under
  trialrun_agent/zygote.py      warm interpreters for `preload`
  trialrun_agent/files.py       write, read, snapshot and `checked_path`
  trialrun_agent/forwarding.py  listen and the forwarded connections
  trialrun_agent/system.py      prctl, the process tree under /proc, OOM counts, descriptors
The image copies the whole folder (COPY agent/ /opt/trialrun-agent/); the bubblewrap backend runs the same
image's root file system, so both carry the package.
"""

import os
import sys

# python3 -I (the image's command line) leaves this folder off sys.path; the package is imported from it alone,
# and the path is put back as it was, so neither a zygote's commands nor an importer (the verifier's runner)
# see the agent's folder where they did not before.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from trialrun_agent.loop import main
    from trialrun_agent.system import descendants, kill_descendants  # noqa: F401 - the verifier's runner kills with these
    from trialrun_agent.zygote import zygote_main
finally:
    del sys.path[0]


if __name__ == '__main__':
    if sys.argv[1:2] == ['--zygote']:
        zygote_main(sys.argv[2:])
    else:
        main(sys.argv[1:])
