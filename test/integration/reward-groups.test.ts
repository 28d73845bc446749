import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createRewardProcessor } from '../../pipelines/reward/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import type { Reward, Verification } from '../../schemas/index.js';
import { ensureStack, eventually, freshContext, readAll } from './harness.js';

let context: ProcessorContext;
before(async () => {
  await ensureStack();
  context = await freshContext('reward-groups');
});

function verification(group: string, attempt: number, passed: boolean, extra: Partial<Verification> = {}): Verification {
  return {
    verificationId: `${group}/${attempt}/v-test`,
    trajectoryId: `${group}/${attempt}`,
    groupId: group,
    groupSize: 3,
    passed,
    tests: [{ id: 'test_hidden.py::test_a', outcome: passed ? 'passed' : 'failed', durationMs: 1, message: null }],
    testsPassed: passed ? 1 : 0,
    testsTotal: 1,
    fractionPassed: passed ? 1 : 0,
    failure: null,
    durationMs: 5,
    hacks: [],
    quarantine: null,
    rescoreId: null,
    lineage: { taskId: `task-${group}`, attempt, runId: 'it', policyVersion: 0, sandboxImageDigest: null, verifierVersion: 'v-test', createdAt: new Date().toISOString() },
    ...extra,
  };
}

/**
 * Sends verifications with chosen broker timestamps, all to one partition so they are read in this order:
 * stream time (per partition) is what closes groups.
 */
async function send(items: Array<[Verification, number]>): Promise<void> {
  const producer = context.kafka.producer();
  await producer.connect();
  try {
    for (const [value, timestamp] of items) {
      await producer.send({ topic: context.names.name('verifications'), messages: [{ key: value.groupId, partition: 0, value: await context.serde.encode('verifications', value), timestamp: String(timestamp) }] });
    }
  } finally {
    await producer.disconnect();
  }
}

const processor = () => createRewardProcessor(context, { stragglerDeadlineMs: 60_000, minGroupSize: 2 });
let running: ReturnType<typeof processor> | undefined;
after(() => running?.stop());

test('groups close when complete or at their straggler deadline; late members, duplicates and re-scored records are handled', { timeout: 180_000 }, async () => {
  const t0 = Date.now() - 3_600_000;
  await send([
    // complete, mixed: learns
    [verification('mixed', 0, true), t0],
    [verification('mixed', 1, false), t0 + 1000],
    [verification('mixed', 1, false), t0 + 1100], // a redelivered duplicate, merged
    [verification('mixed', 2, false), t0 + 1200],
    // complete, all failing: no signal
    [verification('zeros', 0, false), t0 + 2000],
    [verification('zeros', 1, false), t0 + 2100],
    [verification('zeros', 2, false), t0 + 2200],
    // two of three by the deadline: scored with two; the third arrives late
    [verification('partial', 0, true), t0 + 3000],
    [verification('partial', 1, false), t0 + 3100],
    // one of three by the deadline: withheld
    [verification('lonely', 0, true), t0 + 3200],
    // a quarantined task: withheld with the reason
    ...[0, 1, 2].map((i): [Verification, number] => [verification('flaky', i, i === 0, { quarantine: { reason: 'flaky: verdict changed across 3 runs', referenceVerdicts: [true, false, true] } }), t0 + 4000 + i]),
    // re-scored verifications are rewarded by the re-scoring run, not here
    [verification('mixed', 0, true, { rescoreId: 'rescore-x', verificationId: 'mixed/0/v-test/rescore-x' }), t0 + 5000],
    // stream time passes both deadlines
    [verification('clock', 0, true, { groupSize: 1 }), t0 + 70_000],
    [verification('partial', 2, true), t0 + 71_000],
  ]);
  running = processor();
  await running.start();
  const expected = 3 + 3 + 3 + 1 + 3 + 1; // mixed, zeros, partial (incl. late), lonely, flaky, clock
  let rewards: Reward[] = [];
  await eventually('rewards for every trajectory', async () => (rewards = await readAll(context, 'rewards')).length >= expected, 120_000);
  assert.equal(rewards.length, expected, 'exactly one reward per trajectory: the duplicate and the re-scored record got none');
  const of = (group: string) => rewards.filter((r) => r.groupId === group).sort((a, b) => a.trajectoryId.localeCompare(b.trajectoryId));

  assert.deepEqual(of('mixed').map((r) => [r.reward, r.disposition]), [[1, 'learn'], [0, 'learn'], [0, 'learn']]);
  assert.ok(Math.abs(of('mixed').reduce((sum, r) => sum + r.advantage, 0)) < 1e-6);
  assert.ok(of('zeros').every((r) => r.disposition === 'no-signal' && r.advantage === 0 && r.reason === 'all 3 rewards are 0: every advantage is 0'));

  const [p0, p1, p2] = of('partial');
  assert.deepEqual([p0!.disposition, p1!.disposition, p0!.groupSize], ['learn', 'learn', 2]);
  assert.equal(p0!.reason, 'scored with 2 of 3 members verified by the straggler deadline');
  assert.deepEqual([p2!.disposition, p2!.advantage, p2!.reason], ['late', 0, 'arrived after its group was scored with 2 members']);

  assert.deepEqual(of('lonely').map((r) => [r.disposition, r.reason]), [['withheld', 'only 1 of 3 members verified by the straggler deadline (minimum 2)']]);
  assert.ok(of('flaky').every((r) => r.disposition === 'withheld' && r.reason === 'task quarantined: flaky: verdict changed across 3 runs'));
  assert.ok(rewards.every((r) => r.lineage.verifierVersion === 'v-test' && (r.rescoreId ?? null) === null));

  // A restart resumes from the changelog: nothing is scored twice.
  await running.stop();
  running = processor();
  await running.start();
  await send([[verification('after', 0, true, { groupSize: 1 }), t0 + 72_000]]);
  await eventually('the post-restart reward', async () => (await readAll(context, 'rewards')).length >= expected + 1, 60_000);
  assert.equal((await readAll(context, 'rewards')).length, expected + 1);
});
