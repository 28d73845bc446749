/**
 * Exactly once at any instance count (confluent client, KIP-447): the reward processor and the learner, each
 * as several `trialrun run` processes on the same topics, instances SIGKILLed at random moments and started
 * again, and still every trajectory rewarded once and every batch trained once, counted in Kafka
 * (read_committed).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { seededRandom } from '../../policies/index.js';
import { childExit, stopChild } from '../../stack/index.js';
import { syntheticTrajectory, syntheticVerification } from './analytics-fixtures.js';
import { committedPastEnd, ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';

before(ensureStack, { timeout: 900_000 });

const TRAJECTORIES = 48; // 12 groups of 4; 9 of them mixed (learnable), so 36 learnable samples
const BATCH = 8; // 36 learnable samples: 4 updates of 8, 4 samples left pending; staleness stays within the default 4
const INSTANCES = { reward: 3, learner: 2 } as const;
type Role = keyof typeof INSTANCES;

interface Instance {
  readonly role: Role;
  readonly id: string;
  child: ChildProcess;
  /** It said it is running: it holds the lease, the others are standbys. */
  active: boolean;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const fleet: Instance[] = [];
after(async () => {
  for (const instance of fleet) instance.child.kill('SIGKILL');
  await Promise.all(fleet.map((instance) => childExit(instance.child)));
});

test('reward at 3 and learner at 2 instances, SIGKILLed at random: every reward exactly once, every batch trained exactly once', { timeout: 600_000 }, async () => {
  const context = await freshContext('eos');
  const env = { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_KAFKA_CLIENT: 'confluent', TRIALRUN_CHECKPOINTS: tempDir('eos-checkpoints') };
  const start = (instance: Instance): void => {
    const { role, id } = instance;
    const args = ['run', role, '--instance', id, '--session-timeout-ms', '6000', ...(role === 'learner' ? ['--batch-size', String(BATCH)] : [])];
    const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    instance.child = child;
    instance.active = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      if (instance.child === child && text.includes(`running (instance ${id})`)) instance.active = true;
      if (instance.child === child && text.includes('standing by')) instance.active = false;
      process.stderr.write(`# ${role}-${id}: ${text}`);
    });
  };
  for (const role of ['reward', 'learner'] as const) {
    for (let i = 0; i < INSTANCES[role]; i++) {
      const instance = { role, id: String(i), active: false } as Instance;
      start(instance);
      fleet.push(instance);
    }
  }

  const runId = 'eos';
  const trajectories = Array.from({ length: TRAJECTORIES }, (_, i) => syntheticTrajectory(i, { runId, steps: 4 }));
  const verifications = Array.from({ length: TRAJECTORIES }, (_, i) => syntheticVerification(i, { runId }));
  await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))));

  // Verifications arrive a group at a time while instances die at seeded-random moments and come back.
  const random = seededRandom('eos-instances');
  // Mostly the active instance of a role (a standby's death proves little), every third kill any one.
  const kills: string[] = [];
  let feeding = true;
  const killer = (async () => {
    for (let round = 0; feeding; round++) {
      await pause(2_000 + random() * 4_000);
      if (!feeding) break;
      const role: Role = round % 2 === 0 ? 'reward' : 'learner';
      const candidates = fleet.filter((instance) => instance.role === role);
      const active = candidates.find((instance) => instance.active);
      const victim = active && round % 3 !== 2 ? active : candidates[Math.floor(random() * candidates.length)]!;
      const wasActive = victim.active;
      victim.child.kill('SIGKILL');
      await childExit(victim.child);
      kills.push(`${victim.role}-${victim.id}${wasActive ? ' (active)' : ''}`);
      await pause(random() * 1_500);
      start(victim);
    }
  })();
  for (let group = 0; group < TRAJECTORIES / 4; group++) {
    const members = verifications.slice(group * 4, group * 4 + 4);
    await sendRaw(context, 'verifications', await Promise.all(members.map(async (v) => ({ key: v.groupId, value: await context.serde.encode('verifications', v) }))));
    await pause(2_500);
  }
  feeding = false;
  await killer;
  console.log(`# SIGKILLed: ${kills.join(', ')}`);
  for (const role of ['reward', 'learner']) assert.ok(kills.some((k) => k.startsWith(role) && k.endsWith('(active)')), `an active ${role} instance was killed at least once (${kills.join(', ')})`);

  const prefix = context.names.prefix;
  await eventually('the reward group committed past every verification', () => committedPastEnd(context, `${prefix}reward`, 'verifications'), 300_000, 1_000);
  await eventually('the learner committed past every reward', () => committedPastEnd(context, `${prefix}learner`, 'rewards'), 300_000, 1_000);
  await eventually('the learner committed past every trajectory', () => committedPastEnd(context, `${prefix}learner`, 'trajectories'), 300_000, 1_000);

  const rewards = await readAll(context, 'rewards');
  const rewarded = rewards.map((r) => r.trajectoryId).sort();
  assert.deepEqual(rewarded, trajectories.map((t) => t.trajectoryId).sort(), 'every trajectory rewarded exactly once');
  const learnable = rewards.filter((r) => (r.disposition ?? 'learn') === 'learn').length;
  assert.equal(learnable, 36);

  const checkpoints = await readAll(context, 'policyCheckpoints');
  const updates = Math.floor(learnable / BATCH);
  assert.deepEqual(checkpoints.map((c) => c.version), Array.from({ length: updates }, (_, i) => i + 1), 'every batch trained exactly once, in order');
  assert.deepEqual(checkpoints.map((c) => c.parentVersion), Array.from({ length: updates }, (_, i) => i));
  assert.equal(checkpoints.reduce((sum, c) => sum + c.metrics.samples, 0), updates * BATCH, 'no sample trained twice or lost');
  console.log(`# ${kills.length} kills; ${rewards.length} rewards (${learnable} learnable); ${checkpoints.length} checkpoints of ${BATCH} samples`);

  // Graceful: each commits what it holds (bounded, so a stuck instance cannot hold the suite up).
  await Promise.all(fleet.map((instance) => stopChild(instance.child, { graceMs: 120_000 })));
});
