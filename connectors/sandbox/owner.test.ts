import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import { newOwner, ownerState, parseOwner, processStartTicks } from './owner.js';

describe('sandbox owners', () => {
  it('names this process so that it reads back as alive', () => {
    const owner = newOwner();
    const parsed = parseOwner(owner);
    assert.equal(parsed?.host, hostname());
    assert.equal(parsed?.pid, process.pid);
    assert.equal(parsed?.startTicks, processStartTicks(process.pid));
    assert.equal(ownerState(owner), 'alive');
  });

  it('calls an owner gone once its process exited', () => {
    const child = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' });
    const pid = Number(child.stdout.trim());
    assert.equal(ownerState(`${hostname()}:${pid}:12345:pool`), 'gone');
  });

  it('calls an owner gone when its pid now belongs to a younger process', () => {
    const start = Number(processStartTicks(process.pid));
    assert.equal(ownerState(`${hostname()}:${process.pid}:${start + 1}:pool`), 'gone');
  });

  it('cannot tell for other hosts and unreadable labels', () => {
    assert.equal(ownerState(`some-other-host:${process.pid}:1:pool`), 'unknown');
    assert.equal(ownerState('not an owner'), 'unknown');
    assert.equal(ownerState(''), 'unknown');
  });

  it('still reads the older <host>:<pid>:<token> labels, by pid alone', () => {
    assert.equal(ownerState(`${hostname()}:${process.pid}:1a2b3c4d`), 'alive');
  });
});
