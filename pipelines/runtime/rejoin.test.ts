import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rejoinAfterCrash } from './rejoin.js';

test('leaves, waits and joins again until a join succeeds; a failed leave is tried again, not skipped', async () => {
  const steps: string[] = [];
  const leaves = [new Error('disconnect failed'), null, null];
  const joins = [new Error('broker down'), null];
  await rejoinAfterCrash('[test]', new Error('crashed'), {
    leave: async () => {
      steps.push('leave');
      const failure = leaves.shift();
      if (failure) throw failure;
    },
    join: async () => {
      steps.push('join');
      const failure = joins.shift();
      if (failure) throw failure;
    },
  }, new AbortController().signal, 5);
  assert.deepEqual(steps, ['leave', 'leave', 'join', 'leave', 'join']);
});

test('stops when its signal aborts, during the wait or after a failed join', async () => {
  const stop = new AbortController();
  const steps: string[] = [];
  const rejoining = rejoinAfterCrash('[test]', new Error('crashed'), {
    leave: async () => void steps.push('leave'),
    join: async () => {
      steps.push('join');
      throw new Error('broker down');
    },
  }, stop.signal, 20);
  await new Promise((resolve) => setTimeout(resolve, 50));
  stop.abort();
  await rejoining;
  const seen = steps.length;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(steps.length, seen, 'nothing after the abort');
  assert.ok(steps.includes('join'));
});
