import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import test from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkoutFile } from '../schemas/index.js';
import { childExit, isPidAlive, stopChild } from './process.js';

test('a child that obeys SIGTERM ends with it (143), and stopping it again answers its status at once', async () => {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  await once(child, 'spawn');
  assert.equal(await stopChild(child, { graceMs: 60_000 }), 143);
  assert.equal(child.signalCode, 'SIGTERM', 'ended by SIGTERM, not killed');
  assert.equal(await stopChild(child), 143);
  assert.equal(await childExit(child), 143);
});

test('a child that ignores SIGTERM is killed with its group after the grace (137), its own child too', async () => {
  const child = spawn(checkoutFile('test/fixtures/ignores-sigterm.sh'), [], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const grandchild = Number(line.toString().trim());
  assert.ok(Number.isInteger(grandchild) && isPidAlive(grandchild), `the fixture's child runs (pid ${line.toString().trim()})`);
  assert.equal(await stopChild(child, { graceMs: 500, group: true }), 137);
  assert.equal(child.signalCode, 'SIGKILL');
  // The group's SIGKILL reaches the grandchild at once; init reaps it a moment later.
  for (let tries = 0; tries < 50 && isPidAlive(grandchild); tries++) await sleep(100);
  assert.equal(isPidAlive(grandchild), false, 'no process of the group is left');
});
