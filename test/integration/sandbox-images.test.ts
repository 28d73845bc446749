import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dockerClient, dockerComponent } from '../../stack/docker.js';
import { imagesComponent, resolveImageTag } from '../../stack/images.js';
import { BACKENDS } from './sandbox-backends.js';

// A cold run bootstraps Debian and builds every image: minutes, not seconds.
const COLD_BUILD_MS = 20 * 60_000;

describe('sandbox images on the local Docker engine', () => {
  const docker = dockerClient();
  const lines: string[] = [];
  const log = (line: string): void => void lines.push(line);

  before(
    async () => {
      try {
        await dockerComponent().ensure(log);
        await imagesComponent().ensure(log);
      } catch (err) {
        // The thrown message alone rarely says which apt, debootstrap or build step broke.
        throw new Error(`stack set-up failed; last log lines:\n${lines.slice(-40).join('\n')}`, { cause: err });
      }
    },
    { timeout: COLD_BUILD_MS },
  );

  it('python-repair runs pytest as uid 1000 with no network, a read-only root and tight limits', async () => {
    // The dockerode spelling of: docker run --network none --read-only --tmpfs /tmp --cap-drop ALL
    //   --security-opt no-new-privileges --pids-limit 64 --memory 256m
    const container = await docker.createContainer({
      Image: resolveImageTag('python-repair'),
      Cmd: ['sh', '-c', 'id -u; cat /proc/1/comm; test -f /opt/trialrun/trialrun_repair.py && python3 -m pytest --version'],
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        Tmpfs: { '/tmp': '' },
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: 64,
        Memory: 256 * 1024 * 1024,
      },
    });
    try {
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      const output = demux(await container.logs({ stdout: true, stderr: true }));
      assert.equal(StatusCode, 0, output);
      const [uid, init, pytest] = output.trim().split('\n');
      assert.equal(uid, '1000', 'the image runs as the unprivileged sandbox user by default');
      assert.equal(init, 'tini', 'tini is PID 1 and reaps zombies');
      assert.match(pytest ?? '', /^pytest \d+\.\d+/);
    } finally {
      await container.remove({ force: true });
    }
  });

  it('ops has jq, sqlite3, make and node on top of python-repair (uid 1000, tini, the tools), and Harbor\'s /tests and /logs as volumes', async () => {
    const image = await docker.getImage(resolveImageTag('ops')).inspect();
    assert.deepEqual(Object.keys(image.Config.Volumes ?? {}).sort(), ['/logs', '/tests'], 'Harbor\'s verifier paths are volumes, not links into a folder only trialrun makes');
    const container = await docker.createContainer({
      Image: resolveImageTag('ops'),
      Cmd: ['sh', '-c', 'id -u; cat /proc/1/comm; test -f /opt/trialrun/trialrun_search.py && echo tools; jq -n 1+1; echo "select 6*7;" | sqlite3; make --version | head -1; node -e "console.log(40+2)"; mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && cat /logs/verifier/reward.txt; test -d /tests && test ! -L /tests && test ! -L /logs && echo folders'],
      HostConfig: { NetworkMode: 'none', ReadonlyRootfs: true, Tmpfs: { '/tmp': '' }, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
    });
    try {
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      const output = demux(await container.logs({ stdout: true, stderr: true }));
      assert.equal(StatusCode, 0, output);
      const [uid, init, tools, jq, sqlite, make, node, reward, folders] = output.trim().split('\n');
      assert.deepEqual([uid, init, tools, jq, sqlite, node, reward, folders], ['1000', 'tini', 'tools', '2', '42', '42', '1', 'folders']);
      assert.match(make ?? '', /^GNU Make \d/);
    } finally {
      await container.remove({ force: true, v: true });
    }
  });

  for (const backend of BACKENDS) {
    it(`a ${backend.name} sandbox of ops mounts its volumes as sized tmpfs: Harbor's /logs and /tests are writable over the read-only root`, async () => {
      const pool = backend.pool();
      try {
        const sandbox = await pool.acquire({ image: resolveImageTag('ops'), runId: 'it-sandbox-images', taskId: 'harbor-volumes' });
        try {
          const mounts = await sandbox.exec(['grep', '-E', ' /(logs|tests) ', '/proc/mounts'], { timeoutMs: 10_000 });
          // (The process backend lists each twice: the read-only view of the root's mount, and its writable bind.)
          assert.deepEqual([...new Set(mounts.stdout.trim().split('\n').map((line) => line.split(' ').slice(1, 3).join(' ')))].sort(), ['/logs tmpfs', '/tests tmpfs'], mounts.stdout);
          const made = await sandbox.exec(['mkdir', '-p', '/logs/verifier', '/tests/sub'], { timeoutMs: 10_000 });
          assert.equal(made.exitCode, 0, made.stderr);
          const root = await sandbox.exec(['touch', '/opt/nope'], { timeoutMs: 10_000 });
          assert.notEqual(root.exitCode, 0, 'the rest of the root stays read-only');
        } finally {
          await sandbox.release();
        }
      } finally {
        await pool.close();
      }
    });
  }

  it('a second ensure() reuses every image and builds nothing', async () => {
    const tags = ['base', 'python-repair', 'ops'].map((name) => resolveImageTag(name));
    const idsBefore = await Promise.all(tags.map(async (tag) => (await docker.getImage(tag).inspect()).Id));
    lines.length = 0;

    assert.equal(await imagesComponent().ensure(log), 'reused');
    assert.deepEqual(lines, [], 'a warm ensure() logs no build step');
    const idsAfter = await Promise.all(tags.map(async (tag) => (await docker.getImage(tag).inspect()).Id));
    assert.deepEqual(idsAfter, idsBefore);
  });
});

describe('resolveImageTag', () => {
  const recipes = mkdtempSync(join(tmpdir(), 'trialrun-recipes-'));
  const write = (path: string, content: string): void => {
    mkdirSync(join(recipes, path, '..'), { recursive: true });
    writeFileSync(join(recipes, path), content);
  };
  const tags = (): { base: string; child: string } => ({
    base: resolveImageTag('base', recipes),
    child: resolveImageTag('child', recipes),
  });

  before(() => {
    write('base/build-rootfs.sh', '#!/bin/sh\n');
    write('base/packages.txt', 'python3\n');
    write('child/Dockerfile', 'ARG BASE_IMAGE=trialrun/base\nFROM ${BASE_IMAGE}\nCOPY tools/ /opt/trialrun/\n');
    write('child/tools/tool.py', 'print("v1")\n');
  });
  after(() => rmSync(recipes, { recursive: true, force: true }));

  it('is stable and has the trialrun/<name>:<12 hex> form', () => {
    const first = tags();
    assert.match(first.base, /^trialrun\/base:[0-9a-f]{12}$/);
    assert.match(first.child, /^trialrun\/child:[0-9a-f]{12}$/);
    assert.deepEqual(tags(), first);
  });

  it('changes a child when one of its files changes, and leaves the parent alone', () => {
    const old = tags();
    write('child/tools/tool.py', 'print("v2")\n');
    const now = tags();
    assert.equal(now.base, old.base);
    assert.notEqual(now.child, old.child);
  });

  it('changes the parent and every child when a parent file changes', () => {
    const old = tags();
    write('base/packages.txt', 'python3\npython3-pytest\n');
    const now = tags();
    assert.notEqual(now.base, old.base);
    assert.notEqual(now.child, old.child);
  });

  it('counts a new file and a changed executable bit, but not Python byte-code', () => {
    let previous = tags().child;
    write('child/tools/extra.txt', '');
    assert.notEqual(tags().child, previous, 'a new file');

    previous = tags().child;
    chmodSync(join(recipes, 'child/tools/tool.py'), 0o755);
    assert.notEqual(tags().child, previous, 'the executable bit');

    previous = tags().child;
    write('child/tools/__pycache__/tool.cpython-311.pyc', 'bytecode');
    assert.equal(tags().child, previous, 'byte-code');
  });
});

/** Docker's non-TTY log format: 8-byte frame headers (stream, 0, 0, 0, big-endian length) before each chunk. */
function demux(buffer: Buffer): string {
  let text = '';
  for (let offset = 0; offset + 8 <= buffer.length; ) {
    const length = buffer.readUInt32BE(offset + 4);
    text += buffer.subarray(offset + 8, offset + 8 + length).toString('utf8');
    offset += 8 + length;
  }
  return text;
}
