import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { AgentSandboxPool, ExecResult, Sandbox } from '../../connectors/sandbox/index.js';
import { ensureStack, eventually } from './harness.js';
import { BACKENDS, hostProcessesWith, sandboxImage, uniqueMarker } from './sandbox-backends.js';

// Hostile code against both backends, each case with the outcome the sandbox must produce. Limits are small
// so that every bomb hits them within a second or two.
const MiB = 1024 * 1024;
const LIMITS = { pids: 64, memoryBytes: 128 * MiB, workspaceBytes: 24 * MiB, tmpBytes: 24 * MiB, fileSizeBytes: 16 * MiB };

/** Runs a Python snippet that prints one JSON object, and parses it. */
async function probe(sandbox: Sandbox, script: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const result = await sandbox.exec(['python3', '-c', script], { timeoutMs });
  assert.equal(result.exitCode, 0, `probe failed: ${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

const PY_ERRNO = 'import errno, json, os, socket, ctypes\ndef code(e):\n    return errno.errorcode.get(e.errno, type(e).__name__) if isinstance(e.errno, int) and e.errno > 0 else type(e).__name__\n';

function hostIPv4(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

for (const backend of BACKENDS) {
  describe(`sandbox adversarial suite (${backend.name} backend)`, () => {
    let pool: AgentSandboxPool;
    let task = 0;
    const acquire = (): Promise<Sandbox> => pool.acquire({ image: sandboxImage(), runId: 'adversarial', taskId: `adversarial-${++task}` });
    async function inSandbox<T>(work: (sandbox: Sandbox) => Promise<T>): Promise<T> {
      const sandbox = await acquire();
      try {
        return await work(sandbox);
      } finally {
        await sandbox.release();
      }
    }

    before(async () => {
      await ensureStack();
      pool = backend.pool({ warmSize: 2, limits: LIMITS });
    });

    after(async () => {
      await pool.close();
      assert.equal(pool.stats.live, 0);
    });

    it('fork bomb: EAGAIN at the pids limit, the host stays responsive, nothing survives', async () => {
      await inSandbox(async (sandbox) => {
        const forks = await probe(
          sandbox,
          `${PY_ERRNO}import time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(json.dumps({"error": code(e), "forks": n}))`,
        );
        assert.equal(forks.error, 'EAGAIN');
        assert.ok((forks.forks as number) < LIMITS.pids, `forked ${String(forks.forks)} times under a limit of ${LIMITS.pids}`);

        const marker = `bomb-${uniqueMarker()}`;
        const controller = new AbortController();
        const bomb = sandbox.exec(['bash', '-c', 'f() { f | f & }; f; sleep 60', marker], { signal: controller.signal, timeoutMs: 120_000 });
        // The host keeps forking while the bomb is at its limit: every spawn succeeds (speed is bench:sandbox's).
        await eventually('the bomb to reach its pids limit', async () => hostProcessesWith(marker).length >= LIMITS.pids / 2, 60_000, 50);
        const spawns = Array.from({ length: 10 }, () => spawnSync('true'));
        const bombing = hostProcessesWith(marker).length;
        controller.abort();
        const result = await bomb;
        assert.deepEqual(spawns.map((s) => s.error?.message ?? s.status), Array(10).fill(0), 'host spawns during the bomb');
        assert.ok(bombing >= LIMITS.pids / 2, `the bomb was still running during the spawns (${bombing} processes)`);
        assert.equal(result.status, 'timeout');
        assert.match(result.stderr, /Resource temporarily unavailable/);
        assert.deepEqual(hostProcessesWith(marker), [], 'no bomb process survived the timeout');
        assert.equal((await sandbox.exec(['echo', 'ok'])).stdout, 'ok\n', 'the sandbox works again once the bomb is gone');
      });
    });

    it('memory bomb: reported as oom', async () => {
      await inSandbox(async (sandbox) => {
        // One 1 GiB allocation, touched page by page, against a 128 MiB limit.
        const result = await sandbox.exec(['python3', '-c', 'bomb = b"x" * (1 << 30)'], { timeoutMs: 20_000 });
        assert.equal(result.status, 'oom', JSON.stringify(result));
      });
    });

    it('`yes` to stdout: output capped, executor memory bounded', async () => {
      await inSandbox(async (sandbox) => {
        const rssBefore = process.memoryUsage().rss;
        const result = await sandbox.exec(['yes'], { timeoutMs: 3_000, maxOutputBytes: 64 * 1024 });
        const grewBy = process.memoryUsage().rss - rssBefore;
        assert.equal(result.status, 'timeout');
        assert.equal(result.truncated, true);
        assert.ok(result.stdout.length < 64 * 1024 + 100, `${result.stdout.length} characters kept`);
        assert.match(result.stdout, /^(y\n)+\n\[\.\.\. \d+ bytes truncated \.\.\.\]\n/);
        assert.ok(grewBy < 64 * MiB, `executor RSS grew by ${(grewBy / MiB).toFixed(1)} MiB`);
      });
    });

    it('disk fill of /workspace and /tmp: ENOSPC inside, at the sized quota', async () => {
      await inSandbox(async (sandbox) => {
        const filled = await probe(
          sandbox,
          `${PY_ERRNO}out = {}\nchunk = b"x" * (1 << 20)\nfor d in ("/workspace", "/tmp"):\n    written = 0\n    try:\n        for i in range(1000):\n            with open(f"{d}/fill-{i}", "wb") as f:\n                for _ in range(8):\n                    f.write(chunk)\n                    f.flush()\n                    written += len(chunk)\n    except OSError as e:\n        out[d] = [code(e), written]\nprint(json.dumps(out))`,
        );
        for (const [dir, size] of [['/workspace', LIMITS.workspaceBytes], ['/tmp', LIMITS.tmpBytes]] as const) {
          const [error, written] = filled[dir] as [string, number];
          assert.equal(error, 'ENOSPC', `${dir}: ${error}`);
          assert.ok(written <= size, `${dir}: wrote ${written} bytes into a ${size} byte quota`);
        }
        assert.equal((await sandbox.exec(['echo', 'still', 'fine'])).stdout, 'still fine\n');
      });
    });

    it('CPU spin, sleep, ignored SIGTERM, setsid and double fork past the deadline: all killed, no orphan on the host', async () => {
      await inSandbox(async (sandbox) => {
        const marker = uniqueMarker();
        const script = `trap '' TERM; sh -c 'while :; do :; done' spin-${marker} & setsid sleep ${marker} & (sleep ${marker} &); sleep ${marker}`;
        // The deadline leaves ample time to start four processes; the test waits for them, not for a fixed time.
        const running = sandbox.exec(['sh', '-c', script], { timeoutMs: 8_000 });
        let during = 0;
        await eventually('the spinner and three sleeps to run', async () => (during = hostProcessesWith(marker).length) >= 4, 7_000, 50).catch(() => undefined);
        const result: ExecResult = await running;
        assert.ok(during >= 4, `expected the spinner and three sleeps running before the deadline, saw ${during}`);
        assert.equal(result.status, 'timeout');
        assert.deepEqual(hostProcessesWith(marker), []);
      });
    });

    it('network: host 127.0.0.1, the host address, DNS and another sandbox are all unreachable', async () => {
      const port = 20_000 + Math.floor(Math.random() * 10_000);
      const listener = await acquire();
      const other = await acquire();
      try {
        // Runs until its timeout or the release below; only its side effect (the open port) matters.
        void listener
          .exec(['python3', '-c', `import socket, time\ns = socket.socket()\ns.bind(("127.0.0.1", ${port}))\ns.listen()\ntime.sleep(20)`], { timeoutMs: 8_000 })
          .catch(() => undefined);
        // Waits for the listener however long it takes to start (up to its own timeout), rather than a fixed time.
        const self = await probe(
          listener,
          `${PY_ERRNO}import time\ndeadline = time.monotonic() + 7\nwhile True:\n    try:\n        socket.create_connection(("127.0.0.1", ${port}), timeout=2)\n        break\n    except ConnectionRefusedError:\n        if time.monotonic() > deadline:\n            raise\n        time.sleep(0.05)\nprint(json.dumps({"self": "connected"}))`,
        );
        assert.equal(self.self, 'connected', 'the listener is up inside its own sandbox');
        const hostIp = hostIPv4() ?? '10.0.0.1';
        const reach = await probe(
          other,
          `${PY_ERRNO}out = {}\ndef attempt(name, fn):\n    try:\n        fn()\n        out[name] = "connected"\n    except OSError as e:\n        out[name] = code(e)\n` +
            `attempt("host-loopback", lambda: socket.create_connection(("127.0.0.1", 9092), timeout=2))\n` +
            `attempt("host-address", lambda: socket.create_connection(("${hostIp}", 9092), timeout=2))\n` +
            `attempt("dns", lambda: socket.getaddrinfo("example.org", 443))\n` +
            `attempt("other-sandbox", lambda: socket.create_connection(("127.0.0.1", ${port}), timeout=2))\n` +
            `out["interfaces"] = [name for _, name in socket.if_nameindex()]\nprint(json.dumps(out))`,
        );
        assert.equal(reach['host-loopback'], 'ECONNREFUSED');
        assert.equal(reach['host-address'], 'ENETUNREACH');
        assert.equal(reach.dns, 'gaierror');
        assert.equal(reach['other-sandbox'], 'ECONNREFUSED');
        assert.deepEqual(reach.interfaces, ['lo']);
      } finally {
        await Promise.all([listener.release(), other.release()]);
      }
    });

    it('docker socket, mount, new user namespaces, ptrace and /proc/sys writes: denied', async () => {
      await inSandbox(async (sandbox) => {
        const denied = await probe(
          sandbox,
          `${PY_ERRNO}out = {}\nlibc = ctypes.CDLL(None, use_errno=True)\ndef call(name, result):\n    out[name] = errno.errorcode[ctypes.get_errno()] if result != 0 else "allowed"\n` +
            `out["docker-socket-present"] = any(os.path.exists(p) for p in ("/var/run/docker.sock", "/run/docker.sock"))\n` +
            `s = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect("/var/run/docker.sock")\n    out["docker-socket"] = "connected"\nexcept OSError as e:\n    out["docker-socket"] = code(e)\n` +
            `call("mount", libc.mount(b"none", b"/mnt", b"tmpfs", 0, None))\n` +
            `call("unshare-user", libc.unshare(0x10000000))\n` +
            `call("ptrace-agent", libc.ptrace(ctypes.c_long(16), ctypes.c_long(1), None, None))\n` +
            `try:\n    open("/proc/sys/kernel/core_pattern", "w").write("|/tmp/x")\n    out["proc-sys"] = "written"\nexcept OSError as e:\n    out["proc-sys"] = code(e)\n` +
            `print(json.dumps(out))`,
        );
        assert.equal(denied['docker-socket-present'], false);
        assert.equal(denied['docker-socket'], 'ENOENT');
        assert.equal(denied.mount, 'EPERM');
        // Docker's seccomp profile answers EPERM; bubblewrap's --disable-userns leaves a namespace quota of 0 (ENOSPC).
        assert.ok(['EPERM', 'ENOSPC'].includes(denied['unshare-user'] as string), `unshare: ${String(denied['unshare-user'])}`);
        assert.equal(denied['ptrace-agent'], 'EPERM');
        assert.ok(['EROFS', 'EACCES', 'EPERM'].includes(denied['proc-sys'] as string), `/proc/sys: ${String(denied['proc-sys'])}`);
      });
    });

    it('signals from inside cannot stop the agent (PID 1)', async () => {
      await inSandbox(async (sandbox) => {
        const startOf = async (): Promise<string> => (await sandbox.exec(['sh', '-c', 'cut -d" " -f3,22 /proc/1/stat'])).stdout.trim();
        const before = await startOf();
        const sent = await sandbox.exec(['sh', '-c', 'for sig in TERM INT HUP QUIT USR1 STOP KILL; do kill -$sig 1 || exit 1; done; echo sent']);
        assert.equal(sent.stdout, 'sent\n');
        // The agent has answered a command since, so it has run with every signal delivered: it is the same
        // process (same start time), running, not stopped.
        assert.equal((await sandbox.exec(['echo', 'still', 'here'])).stdout, 'still here\n');
        const afterwards = await startOf();
        assert.equal(afterwards.split(' ')[1], before.split(' ')[1], 'PID 1 is the same process');
        assert.notEqual(afterwards.split(' ')[0], 'T', 'PID 1 is not stopped');
      });
    });

    it('overwriting /bin/sh fails, and the next sandbox sees the pristine image', async () => {
      const pristine = await inSandbox(async (sandbox) => {
        const before = (await sandbox.exec(['sha256sum', '/bin/sh'])).stdout;
        const overwrite = await sandbox.exec(['sh', '-c', 'cp /bin/true /bin/sh || echo > /usr/bin/dash; rm -f /bin/sh']);
        assert.notEqual(overwrite.exitCode, 0);
        assert.match(overwrite.stderr, /Read-only file system/);
        return before;
      });
      await inSandbox(async (sandbox) => assert.equal((await sandbox.exec(['sha256sum', '/bin/sh'])).stdout, pristine));
    });

    it('zombies: children nobody waits for are reaped, not left to fill the pids limit', async () => {
      await inSandbox(async (sandbox) => {
        const countZombies = 'def zombies():\n    return sum(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] == "Z" for p in os.listdir("/proc") if p.isdigit())\n';
        // Each sh forks a short sleep, then turns into a long sleep that never waits for it: five zombies.
        const during = await probe(
          sandbox,
          `import json, os, subprocess, time\n${countZombies}for _ in range(5):\n    subprocess.Popen(["sh", "-c", "sleep 0.1 & exec sleep 30"])\ndeadline = time.monotonic() + 15\nwhile zombies() < 5 and time.monotonic() < deadline:\n    time.sleep(0.05)\nprint(json.dumps({"zombies": zombies()}))`,
        );
        assert.equal(during.zombies, 5, 'the command made zombies');
        const afterwards = await probe(sandbox, `import json, os\n${countZombies}print(json.dumps({"zombies": zombies()}))`);
        assert.equal(afterwards.zombies, 0, 'they were reaped when the command ended');
      });
    });

    it('files and background processes left behind are invisible to the next task', async () => {
      const marker = uniqueMarker();
      const first = await acquire();
      await first.writeFiles({ 'secret.txt': 'task 1 only' });
      await first.writeFiles({ 'secret.txt': 'task 1 only' }, '/tmp');
      const lingering = first.exec(['sleep', marker], { timeoutMs: 60_000 }).catch((error: Error) => error);
      await eventually('the lingering command to run', async () => hostProcessesWith(`sleep\0${marker}`).length === 1, 30_000, 50);
      await first.release();
      assert.match(String(await lingering), /is gone/);
      await eventually('the released sandbox to be gone from the host', async () => hostProcessesWith(`sleep\0${marker}`).length === 0, 15_000);

      await inSandbox(async (next) => {
        assert.equal((await next.exec(['ls', '-A', '/workspace', '/tmp'])).stdout, '/tmp:\n\n/workspace:\n');
        const seen = await probe(next, 'import json, os\nprint(json.dumps({"cmdlines": [open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace") for p in os.listdir("/proc") if p.isdigit()]}))');
        const foreign = (seen.cmdlines as string[]).filter((cmdline) => cmdline.includes('sleep'));
        assert.deepEqual(foreign, [], 'no process of the previous task is visible');
      });
    });
  });
}
