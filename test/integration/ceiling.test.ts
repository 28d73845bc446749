import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ProcessSandboxPool } from '../../connectors/sandbox/index.js';
import { makeEnv, type Environment, type RepairObservation } from '../../envs/index.js';
import {
  afterFailedTry,
  appendLabel,
  choiceObservation,
  labelCandidates,
  moduleSha256,
  playLabelled,
  readLabels,
  type ChoiceRule,
  type TaskLabel,
} from '../../pipelines/jobs/ceiling/index.js';
import { evaluatePolicy, evaluationVerifier } from '../../pipelines/jobs/evaluate/index.js';
import { candidateFeatures, linearRepairKind, repairMove } from '../../policies/index.js';
import type { Task, ToolCall } from '../../schemas/index.js';
import { imageFor, stackComponents, stackUp } from '../../stack/index.js';
import { tempDir } from './harness.js';
import { bundledTasks } from './verifier-fixtures.js';

// The process backend, as `ceiling` and `learn --sandbox process` use it: it needs only the engine and the images.
const pool = new ProcessSandboxPool();
const RUN_ID = 'it-ceiling';
const MAX_TURNS = 8;
let tasks: Task[];
let labels: Map<string, TaskLabel>;
let verifier: ReturnType<typeof evaluationVerifier>;

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), stackComponents().filter((component) => ['docker', 'sandbox-images'].includes(component.name)));
  tasks = (await bundledTasks()).filter((task) => ['repair-004-running-sum', 'repair-010-config-parser'].includes(task.taskId));
  assert.equal(tasks.length, 2);
  verifier = evaluationVerifier(tasks, { pool, imageFor, runId: RUN_ID });
  // Labelled as the command labels them: appended as each task is done, then read back.
  const file = join(tempDir('ceiling-labels'), 'labels.jsonl');
  await labelCandidates(tasks, { pool, imageFor, runId: RUN_ID, verifier, concurrency: 1, onLabel: (label) => appendLabel(file, label) });
  labels = readLabels(file);
}, { timeout: 900_000 });
after(() => pool.close());

test('every candidate of each task is labelled, and exactly one of the bundled tasks\' edits solves it', () => {
  for (const task of tasks) {
    const label = labels.get(task.taskId)!;
    assert.equal(label.moduleSha256, moduleSha256(task));
    assert.equal(label.noChoice, null);
    assert.deepEqual(label.observation!.tried, []);
    assert.equal(label.observation!.turn, 2, 'run_tests and list_edits come before the first choice');
    assert.deepEqual(label.candidates.map((c) => c.id), label.observation!.edits!.map((e) => e.id));
    // tasks/check_bundle.py: each bundled task is solvable by exactly one candidate edit.
    assert.equal(label.candidates.filter((c) => c.solves).length, 1, task.taskId);
    assert.ok(label.candidates.some((c) => !c.visiblePass), `${task.taskId} has edits that fail the visible tests`);
  }
});

/** Applies, at each choice, the edit the real episode applied there; refuses a choice the episode did not offer. */
function sameEdits(ids: readonly number[]): { rule: ChoiceRule; choices: () => number } {
  let next = 0;
  return {
    rule: (candidates) => {
      const id = ids[next++];
      const index = candidates.findIndex((edit) => edit.id === id);
      assert.ok(index >= 0, `the replay offers edit ${id} at choice ${next}`);
      return index;
    },
    choices: () => next,
  };
}

test('replaying each real episode\'s edits over the labels gives the verifier\'s verdict and the turn it ended on', { timeout: 900_000 }, async () => {
  const policy = await linearRepairKind.load(linearRepairKind.initial().params, 0);
  const evaluation = await evaluatePolicy(policy, tasks, { pool, imageFor, runId: RUN_ID, maxTurns: MAX_TURNS, samplesPerTask: 4, seed: 'it-ceiling', concurrency: 1, verifier });
  assert.equal(evaluation.records.length, 8);
  const tries: number[] = [];
  for (const { trajectory, verification } of evaluation.records) {
    const applied = trajectory.steps.filter((step) => step.toolCall.name === 'apply_edit').map((step) => step.toolCall.arguments.id as number);
    const replay = sameEdits(applied);
    const outcome = await playLabelled(labels.get(trajectory.lineage.taskId)!, replay.rule, MAX_TURNS);
    const where = `${trajectory.trajectoryId}: edits ${applied.join(', ')}; ${trajectory.steps.map((step) => step.toolCall.name).join(' ')}`;
    assert.deepEqual(outcome, { solved: verification.passed, turns: trajectory.steps.length }, where);
    assert.equal(replay.choices(), applied.length, `${where}: as many choices replayed as made`);
    tries.push(applied.length);
  }
  console.log(`# ${evaluation.successes} of 8 episodes solved; tries per episode ${tries.join(' ')}`);
});

test('afterFailedTry is the observation the real env gives after a failed try, and its features the live policy\'s', { timeout: 300_000 }, async () => {
  for (const task of tasks) {
    const label = labels.get(task.taskId)!;
    const env = makeEnv(task.envId, { pool, runId: RUN_ID, imageFor, maxTurns: MAX_TURNS }) as Environment<RepairObservation>;
    const step = async (call: ToolCall): Promise<RepairObservation> => (await env.step(call)).observation;
    try {
      let observation = await env.init(task);
      for (let move = repairMove(observation); move.kind === 'scripted'; move = repairMove(observation)) observation = await step(move.action.action);
      assert.deepEqual(observation, choiceObservation(label, MAX_TURNS), `${task.taskId}: the labelled first choice is the env's`);
      const failing = label.observation!.edits!.find((edit) => !label.candidates.find((c) => c.id === edit.id)!.visiblePass)!;
      await step({ name: 'apply_edit', arguments: { id: failing.id } });
      assert.equal((await step({ name: 'run_tests', arguments: {} })).lastTests?.passed, false);
      const reverted = await step({ name: 'revert', arguments: {} });
      const predicted = afterFailedTry(observation, failing);
      assert.deepEqual(reverted, predicted, `${task.taskId}: after a failed try of edit ${failing.id}`);
      const move = repairMove(reverted);
      assert.equal(move.kind, 'choose-edit');
      if (move.kind === 'choose-edit') assert.deepEqual(candidateFeatures(move.candidates, predicted), candidateFeatures(move.candidates, reverted));
    } finally {
      await env.close();
    }
  }
});

test('a task whose visible tests pass unedited gets a label without a choice, which replays as its submit', { timeout: 300_000 }, async () => {
  const task = tasks.find((t) => t.taskId === 'repair-010-config-parser')!;
  const fixed: Task = { ...task, taskId: 'repair-010-fixed', files: task.referenceSolution! };
  const [label] = await labelCandidates([fixed], { pool, imageFor, runId: RUN_ID });
  assert.deepEqual(label!.noChoice, { reason: 'the visible tests pass unedited', submitsAtTurn: 2, solves: true });
  assert.deepEqual([label!.observation, label!.candidates], [null, []]);
  assert.deepEqual(await playLabelled(label!, () => assert.fail('there is no choice'), MAX_TURNS), { solved: true, turns: 2 });
});
