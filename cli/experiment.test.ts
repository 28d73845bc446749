import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { LocalCheckpointStore } from '../connectors/checkpoints/index.js';
import type { LoopSummary } from '../pipelines/loop/index.js';
import { linearRepairKind } from '../policies/index.js';
import { budgetComparisons, formatBudgets, formatThroughput, formatTrainingCounts, trainedParams } from './experiment.js';

// successesWithin[n]: episodes solved within n turns; the scripted repair loop solves at 5 (one try) or 8 (two).
const within = (atFive: number, atEight: number): number[] => Array.from({ length: 9 }, (_, n) => (n >= 8 ? atEight : n >= 5 ? atFive : 0));

/**
 * An evaluation of `tasks` tasks x 2 episodes with `atFive` episodes solved at 5 turns and `atEight` in all;
 * `together`: a task's two episodes are solved together (a greedy policy replaying itself), else one per task.
 */
function evaluation(tasks: number, atFive: number, atEight: number, together = false) {
  const turns = [...Array<number>(atFive).fill(5), ...Array<number>(atEight - atFive).fill(8)];
  const byTask = Object.fromEntries(
    Array.from({ length: tasks }, (_, i) => {
      // Spread: task i takes solved episodes i and tasks + i (at most one a task until every task has one).
      const solvedIn = together ? turns.slice(2 * i, 2 * i + 2) : [turns[i], turns[tasks + i]].filter((t): t is number => t !== undefined);
      return [`t${i}`, { episodes: 2, successes: solvedIn.length, solvedIn }];
    }),
  );
  return { episodes: 2 * tasks, successesWithin: within(atFive, atEight), byTask };
}

test('budgets are the turn counts where either policy solves more, each with intervals and a verdict', () => {
  const before = evaluation(116, 20, 45);
  const after = evaluation(116, 60, 95);
  const budgets = budgetComparisons(before, after, 8);
  assert.deepEqual(budgets.map((b) => b.turns), [5, 8]);
  assert.deepEqual(budgets.map((b) => [b.before.successes, b.after.successes, b.verdict]), [[20, 60, 'improved'], [45, 95, 'improved']]);
  assert.equal(budgets[0]!.ratio, 3);
  const lines = formatBudgets({ budgets, trained: { evaluation: { policyVersion: 12 } } as never, trainedVersions: [12] });
  assert.match(formatBudgets({ budgets, trained: { evaluation: { policyVersion: 12 } } as never, trainedVersions: [7, 8, 9, 10, 11, 12] })[1]!, /^within  8 turns: .* -> v7-v12 mean /);
  assert.match(lines[0]!, /^within  5 turns: 8\.6% \[5\.6%, 12\.9%\] -> v12 25\.9% \[20\.7%, 31\.9%\] \(232 \+ 232 episodes, worth 232 \+ 232 independent ones; 3\.00x, difference \+17\.2 points, 95% \+10\.5 to \+23\.9: improved\)$/);
});

test('a difference inside the noise is called so', () => {
  const [budget] = budgetComparisons(evaluation(58, 10, 10), evaluation(58, 14, 14), 8).slice(-1);
  assert.equal(budget!.verdict, 'within noise');
  assert.match(formatBudgets({ budgets: [budget!], trained: { evaluation: { policyVersion: 3 } } as never, trainedVersions: [3] })[0]!, /within noise\)$/);
});

test("a task's episodes solved together count as fewer independent ones: the intervals widen", () => {
  const spread = budgetComparisons(evaluation(116, 20, 50), evaluation(116, 40, 84), 8).at(-1)!;
  const together = budgetComparisons(evaluation(116, 20, 50, true), evaluation(116, 40, 84, true), 8).at(-1)!;
  assert.deepEqual([together.before.successes, together.after.successes], [spread.before.successes, spread.after.successes]);
  assert.ok(together.after.effectiveEpisodes < 130, `a greedy policy's duplicated episodes are worth about one a task, got ${together.after.effectiveEpisodes}`);
  assert.equal(spread.after.effectiveEpisodes, 232);
  const width = (c: typeof spread): number => c.difference.interval.high - c.difference.interval.low;
  assert.ok(width(together) > 1.2 * width(spread));
});

test('the training counts explain no-signal groups, max-turn episodes and checkpoints in a line each', () => {
  const training = { trajectories: 40, epochs: 1, passRate: 0.25, checkpoints: 2, rewardDispositions: { learn: 16, 'no-signal': 24 }, outcomes: { submitted: 12, 'max-turns': 28 } } as unknown as LoopSummary;
  const lines = formatTrainingCounts(training, [2]);
  assert.equal(lines.length, 4);
  assert.match(lines[3]!, /plays the newest$/);
  assert.match(formatTrainingCounts(training, [1, 2])[3]!, /plays the mean of the newest 2 \(v1-v2, --tail-average\)$/);
  assert.match(lines[1]!, /^no-signal +24 of 40 rewards \(60\.0%\).*16 carried a gradient$/);
  assert.match(lines[2]!, /^max-turn episodes 28 of 40 /);
  assert.match(lines[3]!, /^checkpoints +2: /);
});

test('the throughput lines show each instance of a stage, so that one idle instance stands out', () => {
  const evaluation = { evaluation: { episodes: 232 }, seconds: 200, load: 2 } as never;
  const training = {
    elapsedMs: 600_000,
    stages: {
      'rollout-worker': { instances: 2, records: 1000, perMinute: 100, busySeconds: 590, perInstance: [{ records: 1000, busySeconds: 590 }, { records: 0, busySeconds: 0 }] },
      reward: { instances: 1, records: 1000, perMinute: 100, busySeconds: 1, perInstance: [{ records: 1000, busySeconds: 1 }] },
    },
  } as unknown as LoopSummary;
  const lines = formatThroughput({ training, untrained: evaluation, trained: evaluation, trainingLoad: 1.5 });
  assert.match(lines[1]!, /^  rollout-worker +1000 records +100\.0\/min  2 instances  busy 49\.2% \(each: 98\.3% \/ 1000 records, 0\.0% \/ 0 records\)$/);
  assert.match(lines[2]!, /^  reward +1000 records +100\.0\/min  1 instance   busy 0\.2%$/);
});

test('the trained evaluation plays the mean of the newest share of the checkpoints, the newest alone at 0 or for a kind that cannot average', async () => {
  const root = mkdtempSync(join(tmpdir(), 'trialrun-tail-'));
  try {
    const store = new LocalCheckpointStore(root);
    const kind = linearRepairKind;
    assert.deepEqual(await trainedParams(kind, store, 0.5), { params: kind.initial().params, versions: [] }, 'no checkpoint: the untrained policy');
    const weights = (version: number): number[] => kind.initial().params.map(() => version);
    for (const version of [1, 2, 3, 4, 5]) await store.put(kind.policyId, version, kind.encodeParams(weights(version)));
    const half = await trainedParams<number[]>(kind, store, 0.5);
    assert.deepEqual(half.versions, [3, 4, 5], 'ceil(0.5 x 5) = 3 newest');
    assert.deepEqual(half.params, weights(4));
    assert.deepEqual(await trainedParams(kind, store, 0), { params: weights(5), versions: [5] });
    assert.deepEqual((await trainedParams(kind, store, 1)).versions, [1, 2, 3, 4, 5]);
    const { average: _, ...cannotAverage } = kind;
    assert.deepEqual(await trainedParams(cannotAverage, store, 0.5), { params: weights(5), versions: [5] });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
