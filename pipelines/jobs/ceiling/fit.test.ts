import assert from 'node:assert/strict';
import { test } from 'node:test';
import { candidateFeatures, ONNX_REPAIR_FEATURE_NAMES, repairMove, seededRandom } from '../../../policies/index.js';
import { ConfigError } from '../../../schemas/index.js';
import { noChoiceLabel, taskLabel, type Outcome } from '../../../test/fixtures/ceiling-labels.js';
import {
  afterFailedTry,
  choiceObservation,
  drawWithoutReplacement,
  fitCeiling,
  likelihoodSamples,
  oracleRate,
  playLabelled,
  resolveCeilingFitOptions,
  solvingLogProbability,
  trainingDecisions,
  tryRates,
  uniformRates,
  type ChoiceRule,
  type EpisodeOutcome,
} from './fit.js';
import type { TaskLabel } from './label.js';

// Edits 0 and 3 fail the visible tests, 1 passes them but not the hidden tests, 2 solves the task.
const label = taskLabel('t', ['fail', 'pass', 'solve', 'fail']);

/** Applies the edits of these ids, in order, at the choices the script offers. */
const byIds = (...ids: number[]): ChoiceRule => {
  let next = 0;
  return (candidates) => {
    const id = ids[next++];
    return candidates.findIndex((edit) => edit.id === id);
  };
};

test('afterFailedTry is the observation the env gives after apply_edit, run_tests (failing) and revert', () => {
  const first = choiceObservation(label, 8);
  const edit = first.edits![3]!;
  const before = structuredClone(first);
  const next = afterFailedTry(first, edit);
  assert.deepEqual(next, {
    ...first,
    turn: 5,
    applied: null,
    tried: [3],
    lastTests: null,
    lastTool: 'revert',
    lastResult: { ok: true, output: 'reverted', truncated: false, exitCode: 0 },
  });
  assert.deepEqual(first, before, 'the observation it starts from is left as it was');
  assert.equal(next.baselineTests, first.baselineTests, 'the first test run stays what the features read');
  assert.deepEqual(afterFailedTry(next, first.edits![0]!).tried, [3, 0]);
  // What the script does next is choose again among the untried edits.
  const move = repairMove(next);
  assert.equal(move.kind, 'choose-edit');
  assert.deepEqual(move.kind === 'choose-edit' && move.candidates.map((e) => e.id), [0, 1, 2]);
});

test('choiceObservation puts the episode length in; a task without a choice has none', () => {
  assert.equal(choiceObservation(label, 5).maxTurns, 5);
  assert.equal(choiceObservation(label, 5).turn, 2);
  assert.throws(() => choiceObservation(noChoiceLabel('n', { reason: 'tests pass', submitsAtTurn: 2, solves: true }), 8), ConfigError);
});

test('playLabelled replays the script: three calls a try, a visible pass submits, a failed one reverts', async () => {
  const play = (rule: ChoiceRule, maxTurns: number): Promise<EpisodeOutcome> => playLabelled(label, rule, maxTurns);
  // Within 5 calls: run_tests, list_edits, apply, run_tests, submit: one try.
  assert.deepEqual(await play(byIds(2), 5), { solved: true, turns: 5 });
  assert.deepEqual(await play(byIds(0, 2), 5), { solved: false, turns: 5 }, 'the revert is the fifth call: the env ends the episode');
  // Within 8: a second try after the revert at 5.
  assert.deepEqual(await play(byIds(0, 2), 8), { solved: true, turns: 8 });
  assert.deepEqual(await play(byIds(0, 3), 8), { solved: false, turns: 8 });
  assert.deepEqual(await play(byIds(0, 1), 8), { solved: false, turns: 8 }, 'a visible pass submits even when the hidden tests fail it');
  assert.deepEqual(await play(byIds(1), 8), { solved: false, turns: 5 });
  // 6 calls leave no room for a second try after the revert at 5: the script submits the unedited module.
  assert.deepEqual(await play(byIds(0), 6), { solved: false, turns: 6 });
  // 7 leave room for apply and run_tests, and the env ends the episode on that run: a visible pass is submitted there.
  assert.deepEqual(await play(byIds(0, 2), 7), { solved: true, turns: 7 });
  assert.deepEqual(await play(byIds(0, 3), 7), { solved: false, turns: 7 });
  assert.deepEqual(await play(byIds(0, 3, 2), 11), { solved: true, turns: 11 });
  // At a cap of 4 the env ends the episode on the test run itself, a visible pass included.
  assert.deepEqual(await play(byIds(2), 4), { solved: true, turns: 4 });
  assert.deepEqual(await play(byIds(0), 4), { solved: false, turns: 4 });
  assert.deepEqual(await play(byIds(), 3), { solved: false, turns: 3 }, 'no room for a try: it submits at once');
});

test('playLabelled gives the choice rule the untried edits and the observation the live policy would see', async () => {
  const seen: { ids: number[]; turn: number; tried: readonly number[]; features: number[][] }[] = [];
  const rule: ChoiceRule = (candidates, observation) => {
    seen.push({ ids: candidates.map((e) => e.id), turn: observation.turn, tried: observation.tried, features: candidateFeatures(candidates, observation) });
    return candidates.findIndex((e) => e.id === (seen.length === 1 ? 3 : 2));
  };
  assert.deepEqual(await playLabelled(label, rule, 8), { solved: true, turns: 8 });
  assert.deepEqual(seen.map(({ ids, turn, tried }) => ({ ids, turn, tried })), [
    { ids: [0, 1, 2, 3], turn: 2, tried: [] },
    { ids: [0, 1, 2], turn: 5, tried: [3] },
  ]);
  const second = afterFailedTry(choiceObservation(label, 8), label.observation!.edits![3]!);
  assert.deepEqual(seen[1]!.features, candidateFeatures(second.edits!.slice(0, 3), second));
  await assert.rejects(playLabelled(label, () => 9, 8), RangeError);
});

test('a task without a choice ends where the script submits, or at the cap when it repeats a failing call', async () => {
  const never: ChoiceRule = () => assert.fail('there is no choice');
  assert.deepEqual(await playLabelled(noChoiceLabel('p', { reason: 'tests pass', submitsAtTurn: 2, solves: true }), never, 8), { solved: true, turns: 2 });
  assert.deepEqual(await playLabelled(noChoiceLabel('r', { reason: 'repeats', submitsAtTurn: null, solves: false }), never, 8), { solved: false, turns: 8 });
});

/** Every sequence of choices, each uniformly likely at its choice point: the success within 5 and 8 calls in expectation. */
async function enumerateUniform(task: TaskLabel): Promise<[number, number]> {
  const within: [number, number] = [0, 0];
  const walk = async (prefix: number[], probability: number): Promise<void> => {
    let depth = 0;
    let branches = 0;
    const rule: ChoiceRule = (candidates) => {
      if (depth < prefix.length) return prefix[depth++]!;
      branches = candidates.length;
      throw new Error('branch');
    };
    try {
      const outcome = await playLabelled(task, rule, 8);
      if (outcome.solved && outcome.turns <= 5) within[0] += probability;
      if (outcome.solved && outcome.turns <= 8) within[1] += probability;
    } catch {
      for (let i = 0; i < branches; i++) await walk([...prefix, i], probability / branches);
    }
  };
  await walk([], 1);
  return within;
}

test('uniformRates is the exact expectation of a uniform choice, as enumerating every choice gives', async () => {
  assert.deepEqual(
    uniformRates([label]).within.map((b) => [b.turns, b.rate]),
    [
      [5, 1 / 4],
      [8, 1 / 4 + (2 / 4) * (1 / 3)],
    ],
  );
  const random = seededRandom('uniform');
  const outcomes: Outcome[] = ['fail', 'pass', 'solve'];
  const labels = Array.from({ length: 12 }, (_, i) => taskLabel(`r${i}`, Array.from({ length: 1 + Math.floor(random() * 7) }, () => outcomes[Math.floor(random() * 3)]!)));
  labels.push(noChoiceLabel('p', { reason: 'tests pass', submitsAtTurn: 2, solves: true }));
  const expected = [0, 0];
  for (const task of labels) (await enumerateUniform(task)).forEach((p, i) => (expected[i]! += p / labels.length));
  const rates = uniformRates(labels);
  assert.equal(rates.tasks, 13);
  rates.within.forEach((b, i) => assert.ok(Math.abs(b.rate - expected[i]!) < 1e-12, `within ${b.turns}: ${b.rate} vs ${expected[i]}`));
});

test('tryRates counts each task once within each budget, with Wilson intervals', async () => {
  const labels = [label, taskLabel('u', ['fail', 'solve']), taskLabel('v', ['pass']), noChoiceLabel('w', { reason: 'no candidate edits', submitsAtTurn: 3, solves: false })];
  // Always the first untried edit: t fails 0 then passes 1 unsolved; u fails 0 then solves at 8; v passes unsolved.
  const rates = await tryRates(labels, () => () => 0);
  assert.equal(rates.tasks, 4);
  assert.deepEqual(rates.within.map((b) => [b.turns, b.successes]), [[5, 0], [8, 1]]);
  assert.ok(rates.within[1]!.interval.low < 0.25 && rates.within[1]!.interval.high > 0.25);
  const solving = await tryRates(labels, (task) => (candidates) => Math.max(0, candidates.findIndex((e) => task.candidates[e.id]!.solves)));
  assert.deepEqual(solving.within.map((b) => b.successes), [2, 2]);
});

test('oracleRate is the share of tasks some edit solves (or that the script solves without a choice)', () => {
  const labels = [label, taskLabel('u', ['fail', 'pass']), noChoiceLabel('p', { reason: 'tests pass', submitsAtTurn: 2, solves: true })];
  assert.deepEqual(oracleRate(labels), { tasks: 3, solvable: 2, rate: 2 / 3 });
  assert.deepEqual(oracleRate([]), { tasks: 0, solvable: 0, rate: 0 });
});

test('resolveCeilingFitOptions fills in the defaults and refuses bad values by name', () => {
  const resolved = resolveCeilingFitOptions();
  assert.deepEqual(
    [resolved.steps, resolved.learningRate, resolved.hiddenSize, resolved.secondChoicesPerTask, resolved.reportEvery, resolved.seed],
    [400, 0.03, 32, 2, 100, 'ceiling'],
  );
  for (const [options, field] of [
    [{ steps: -1 }, 'steps'],
    [{ steps: 1.5 }, 'steps'],
    [{ learningRate: 0 }, 'learningRate'],
    [{ learningRate: Number.NaN }, 'learningRate'],
    [{ hiddenSize: 0 }, 'hiddenSize'],
    [{ secondChoicesPerTask: -1 }, 'secondChoicesPerTask'],
    [{ reportEvery: 0 }, 'reportEvery'],
    [{ seed: '' }, 'seed'],
  ] as const) {
    assert.throws(() => resolveCeilingFitOptions(options), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`CeilingFitOptions.${field} must be`));
  }
});

test('trainingDecisions: the first choice and up to k second choices after failed tries, with the solving candidates marked', () => {
  const labels = [label, taskLabel('u', ['fail', 'fail', 'fail', 'solve', 'pass']), noChoiceLabel('p', { reason: 'tests pass', submitsAtTurn: 2, solves: true })];
  const decisions = trainingDecisions(labels, 2, 'seed');
  assert.deepEqual(decisions.map((d) => d.taskId), ['t', 't', 't', 'u', 'u', 'u']);
  assert.deepEqual(decisions[0]!.solving, [2]);
  assert.ok(decisions.every((d) => d.features.every((row) => row.length === ONNX_REPAIR_FEATURE_NAMES.length)));
  // Second choices come after failed tries of distinct edits, and have one candidate fewer.
  const afterIds = decisions.filter((d) => d.taskId === 'u' && d.at !== 'first').map((d) => Number(d.at.split(' ')[1]));
  assert.equal(new Set(afterIds).size, 2);
  assert.ok(afterIds.every((id) => [0, 1, 2].includes(id)));
  const first = choiceObservation(labels[1]!, 8);
  const second = decisions.find((d) => d.taskId === 'u' && d.at !== 'first')!;
  const failedEdit = first.edits![afterIds[0]!]!;
  const untried = first.edits!.filter((e) => e.id !== failedEdit.id);
  assert.deepEqual(second.features, candidateFeatures(untried, afterFailedTry(first, failedEdit)));
  assert.deepEqual(second.solving, [untried.findIndex((e) => e.id === 3)]);
  assert.deepEqual(trainingDecisions(labels, 2, 'seed'), decisions, 'the draw is the seed\'s');
  assert.equal(trainingDecisions(labels, 0, 'seed').length, 2);
});

test('drawWithoutReplacement draws distinct items, as many as there are at most', () => {
  const drawn = drawWithoutReplacement([1, 2, 3, 4, 5], 3, seededRandom('d'));
  assert.equal(new Set(drawn).size, 3);
  assert.deepEqual(drawWithoutReplacement([1, 2, 3, 4, 5], 3, seededRandom('d')), drawn);
  assert.deepEqual(drawWithoutReplacement([1, 2], 5, seededRandom('d')).sort(), [1, 2]);
});

test('likelihoodSamples: one sample per solving candidate at its current log-probability, advantages summing to 1 per decision', () => {
  const features = [[0], [1], [2]];
  const samples = likelihoodSamples([{ taskId: 't', at: 'first', features, solving: [0, 2] }], [[-0.5, -2, -1.5]]);
  assert.deepEqual(
    samples.map((s) => [s.decisions[0]!.chosen, s.decisions[0]!.logprob, s.advantage, s.weight]),
    [
      [0, -0.5, 0.5, 1],
      [2, -1.5, 0.5, 1],
    ],
  );
  assert.ok(Math.abs(solvingLogProbability([0, 2], [-0.5, -2, -1.5]) - Math.log(Math.exp(-0.5) + Math.exp(-1.5))) < 1e-12);
});

test('fitCeiling learns to pick the solving kind of edit and reports its curve', { timeout: 120_000 }, async () => {
  // The solving edit is the one compare-op among other kinds, at a random place: learnable from the features alone.
  const random = seededRandom('fit');
  const make = (prefix: string, count: number): TaskLabel[] =>
    Array.from({ length: count }, (_, i) => {
      const size = 3 + Math.floor(random() * 4);
      const solving = Math.floor(random() * size);
      const outcomes: Outcome[] = Array.from({ length: size }, (_, j) => (j === solving ? 'solve' : 'fail'));
      const kinds = outcomes.map((_, j) => (j === solving ? 'compare-op' : ['arith-op', 'off-by-one', 'bool-op'][j % 3]!));
      return taskLabel(`${prefix}${i}`, outcomes, kinds);
    });
  const points: number[] = [];
  const fit = await fitCeiling(make('train', 12), make('held', 8), { steps: 30, reportEvery: 10, hiddenSize: 4, learningRate: 0.1, onReport: (point) => points.push(point.step) });
  assert.deepEqual(points, [0, 10, 20, 30]);
  assert.deepEqual(fit.curve.map((point) => point.step), points);
  assert.equal(fit.final, fit.curve.at(-1));
  assert.equal(fit.learnableDecisions, fit.decisions);
  assert.ok(fit.decisions > 12, 'second choices are trained on too');
  assert.ok(fit.final.trainLogLikelihood! > fit.curve[0]!.trainLogLikelihood!, 'the solving edits became more likely');
  assert.equal(fit.final.held.within[0]!.successes, 8, 'the fitted policy picks the compare-op first on every held-out task');
  assert.equal(fit.final.train.within[1]!.successes, 12);
});
