import type { CandidateEdit, RepairObservation } from '../../../envs/index.js';
import {
  candidateFeatures,
  freshAdamState,
  greedyIndex,
  initialParams,
  OnnxScorer,
  OnnxTrainer,
  repairMove,
  seededRandom,
  type OnnxParams,
  type OnnxRuntimeOptions,
  type PolicySample,
} from '../../../policies/index.js';
import { ConfigError, finiteNumber, requireOption, wholeNumber, type ToolResult } from '../../../schemas/index.js';
import { wilsonInterval, type Interval } from '../evaluate/index.js';
import type { CandidateLabel, NoChoice, TaskLabel } from './label.js';

/** The held-out evaluation's budgets: success within 5 tool calls is a first-try fix, within 8 a fix by the second try. */
export const TURN_BUDGETS = [5, 8] as const;
/** Replayed episodes are as long as `learn`'s (its --max-turns default), and counted within each budget as its evaluation counts them. */
export const EPISODE_MAX_TURNS = 8;

/** How a replayed episode ends: solved or not (the verifier's verdict on what it submits), after how many tool calls. */
export interface EpisodeOutcome {
  readonly solved: boolean;
  readonly turns: number;
}

/** A choice rule: the index, among the untried candidates the script offers, of the edit to apply. */
export type ChoiceRule = (candidates: readonly CandidateEdit[], observation: RepairObservation) => number | Promise<number>;

/** Makes the choice rule for one task's episode (a rule may keep state per episode: a seeded tie-break). */
export type Chooser = (label: TaskLabel) => ChoiceRule;

/** What `revert` returns in the program-repair env. */
const REVERTED: ToolResult = { ok: true, output: 'reverted', truncated: false, exitCode: 0 };

/**
 * The observation the program-repair env gives after a failed try of `edit` at `observation`: apply_edit, then
 * run_tests (failing), then revert, as the script does. Three calls; the edit is tried and no longer applied; the
 * test run is forgotten (the env clears `lastTests` on revert, while `baselineTests` stays the first run); the last
 * call is the revert and its result. Nothing else changes: the module the env lists edits of is the task's.
 */
export function afterFailedTry(observation: RepairObservation, edit: CandidateEdit): RepairObservation {
  return { ...observation, turn: observation.turn + 3, applied: null, tried: [...observation.tried, edit.id], lastTests: null, lastTool: 'revert', lastResult: REVERTED };
}

/** The first choice of a labelled task in an episode of `maxTurns` tool calls (the label keeps the labelling cap). */
export function choiceObservation(label: TaskLabel, maxTurns: number): RepairObservation {
  if (label.observation === null) throw new ConfigError(`task ${label.taskId} has no choice to replay: ${label.noChoice?.reason ?? 'no observation'}`);
  return { ...label.observation, maxTurns };
}

/**
 * Where the script stands at a choice point (the first choice, or after a revert): the end of the episode, or the
 * candidates it offers. The env ends an episode on the call that reaches its cap; otherwise `repairMove` decides,
 * and its only move at a choice point besides choosing is to submit the unedited module (no untried edit, or no
 * room for apply, run tests and submit).
 */
function atChoicePoint(observation: RepairObservation): { readonly outcome: EpisodeOutcome } | { readonly candidates: readonly CandidateEdit[] } {
  if (observation.turn >= observation.maxTurns) return { outcome: { solved: false, turns: observation.turn } };
  const move = repairMove(observation);
  if (move.kind === 'choose-edit') return { candidates: move.candidates };
  if (move.action.action.name !== 'submit') throw new Error(`replay: at a choice point the repair script asked for ${move.action.action.name}`);
  return { outcome: { solved: false, turns: observation.turn + 1 } };
}

/**
 * What a try of a labelled candidate at a choice point leads to: apply (turn + 1), run the tests (turn + 2), then a
 * visible pass submits (turn + 3) and is solved when the verifier passes it; a visible failure reverts (null: the
 * next choice point is `afterFailedTry`). The env ends the episode on the call that reaches its cap. A failing
 * run at the cap counts unsolved: labels judge visible passes only (with the script's two calls before the first
 * choice this needs a cap of 4 + 3k, never 5 or 8).
 */
function tryOutcome(candidate: CandidateLabel, observation: RepairObservation): EpisodeOutcome | null {
  const tested = observation.turn + 2;
  if (candidate.visiblePass) return { solved: candidate.solves, turns: Math.min(tested + 1, observation.maxTurns) };
  return tested >= observation.maxTurns ? { solved: false, turns: tested } : null;
}

/** How the script's episode ends on a task without a choice: it submits the unedited module, or repeats its failing call to the cap. */
function noChoiceOutcome(noChoice: NoChoice, maxTurns: number): EpisodeOutcome {
  return { solved: noChoice.solves, turns: Math.min(noChoice.submitsAtTurn ?? maxTurns, maxTurns) };
}

const candidateIndex = (label: TaskLabel): ((edit: CandidateEdit) => CandidateLabel) => {
  const byId = new Map(label.candidates.map((candidate) => [candidate.id, candidate]));
  return (edit) => {
    const candidate = byId.get(edit.id);
    if (!candidate) throw new ConfigError(`task ${label.taskId}: edit ${edit.id} has no label`);
    return candidate;
  };
};

/**
 * Replays the repair script over a task's labels for any choice rule, in an episode of `maxTurns` tool calls:
 * whether the verifier passes what it submits and after how many calls, as the held-out evaluation counts them
 * (a visible pass submits even when the hidden tests then fail it).
 */
export async function playLabelled(label: TaskLabel, choose: ChoiceRule, maxTurns: number): Promise<EpisodeOutcome> {
  if (label.noChoice !== null) return noChoiceOutcome(label.noChoice, maxTurns);
  const labelOf = candidateIndex(label);
  let observation = choiceObservation(label, maxTurns);
  for (;;) {
    const point = atChoicePoint(observation);
    if ('outcome' in point) return point.outcome;
    const index = await choose(point.candidates, observation);
    const edit = point.candidates[index];
    if (!Number.isInteger(index) || !edit) throw new RangeError(`task ${label.taskId}: the choice rule chose ${index} of ${point.candidates.length} candidates`);
    const outcome = tryOutcome(labelOf(edit), observation);
    if (outcome) return outcome;
    observation = afterFailedTry(observation, edit);
  }
}

/**
 * Every way a uniformly random choice can end the episode, with its probability. Failed tries all lead on alike
 * (only how many untried edits of each outcome are left matters), so one of them stands for all: exact, and
 * linear in the candidates rather than exponential in the tries.
 */
function uniformOutcomes(label: TaskLabel, maxTurns: number): { readonly probability: number; readonly outcome: EpisodeOutcome }[] {
  if (label.noChoice !== null) return [{ probability: 1, outcome: noChoiceOutcome(label.noChoice, maxTurns) }];
  const labelOf = candidateIndex(label);
  const outcomes: { probability: number; outcome: EpisodeOutcome }[] = [];
  let observation = choiceObservation(label, maxTurns);
  let probability = 1;
  for (;;) {
    const point = atChoicePoint(observation);
    if ('outcome' in point) {
      outcomes.push({ probability, outcome: point.outcome });
      return outcomes;
    }
    const each = probability / point.candidates.length;
    const failed = point.candidates.filter((edit) => {
      const outcome = tryOutcome(labelOf(edit), observation);
      if (outcome) outcomes.push({ probability: each, outcome });
      return outcome === null;
    });
    if (failed.length === 0) return outcomes;
    probability = each * failed.length;
    observation = afterFailedTry(observation, failed[0]!);
  }
}

/** A success rate within one turn budget, over tasks (one episode each), with its 95% Wilson interval. */
export interface BudgetRate {
  readonly turns: number;
  readonly successes: number;
  readonly rate: number;
  readonly interval: Interval;
}

export interface Rates {
  readonly tasks: number;
  /** One per TURN_BUDGETS entry. */
  readonly within: readonly BudgetRate[];
}

/** The expected success rate within one turn budget (no interval: an exact expectation over these tasks' choices). */
export interface ExpectedRate {
  readonly turns: number;
  readonly expectedSuccesses: number;
  readonly rate: number;
}

export interface ExpectedRates {
  readonly tasks: number;
  readonly within: readonly ExpectedRate[];
}

/** Success within each budget of TURN_BUDGETS, replaying one episode per task of EPISODE_MAX_TURNS calls with the chooser's rule. */
export async function tryRates(labels: readonly TaskLabel[], chooser: Chooser): Promise<Rates> {
  const outcomes: EpisodeOutcome[] = [];
  for (const label of labels) outcomes.push(await playLabelled(label, chooser(label), EPISODE_MAX_TURNS));
  return {
    tasks: labels.length,
    within: TURN_BUDGETS.map((turns) => {
      const successes = outcomes.filter((outcome) => outcome.solved && outcome.turns <= turns).length;
      return { turns, successes, rate: labels.length ? successes / labels.length : 0, interval: wilsonInterval(successes, labels.length) };
    }),
  };
}

/** The exact expected success within each budget of a policy that picks uniformly among the untried edits (the untrained one). */
export function uniformRates(labels: readonly TaskLabel[]): ExpectedRates {
  const outcomes = labels.flatMap((label) => uniformOutcomes(label, EPISODE_MAX_TURNS));
  return {
    tasks: labels.length,
    within: TURN_BUDGETS.map((turns) => {
      const expectedSuccesses = outcomes.reduce((sum, { probability, outcome }) => sum + (outcome.solved && outcome.turns <= turns ? probability : 0), 0);
      return { turns, expectedSuccesses, rate: labels.length ? expectedSuccesses / labels.length : 0 };
    }),
  };
}

/**
 * The share of tasks some candidate edit solves (or that the script solves without a choice): what a policy told
 * every verdict reaches at its first try, and the most any edit chooser can.
 */
export function oracleRate(labels: readonly TaskLabel[]): { readonly tasks: number; readonly solvable: number; readonly rate: number } {
  const solvable = labels.filter((label) => label.noChoice?.solves === true || label.candidates.some((candidate) => candidate.solves)).length;
  return { tasks: labels.length, solvable, rate: labels.length ? solvable / labels.length : 0 };
}

export interface CeilingFitOptions {
  /** Full-batch Adam steps on the training decisions. @default 400 */
  steps?: number;
  /** Adam step size. @default 0.03 */
  learningRate?: number;
  /** Hidden units of the policy's MLP. @default 32 */
  hiddenSize?: number;
  /** Second choices per training task, each after a failed try of a different edit, drawn from the seed. @default 2 */
  secondChoicesPerTask?: number;
  /** Steps between two points of the curve (the first is the untrained policy, the last the fitted one). @default 100 */
  reportEvery?: number;
  /** Seeds the initial parameters, the second choices drawn and the greedy tie-breaks. @default 'ceiling' */
  seed?: string;
  /** Where the scoring and update models run. @default {} (one CPU thread) */
  runtime?: OnnxRuntimeOptions;
  /** Called with each point of the curve as it is measured. @default none */
  onReport?: (point: CurvePoint) => void;
  /** @default none */
  signal?: AbortSignal;
}

export type ResolvedCeilingFitOptions = Readonly<Required<Omit<CeilingFitOptions, 'onReport' | 'signal'>>> & Pick<CeilingFitOptions, 'onReport' | 'signal'>;

export function resolveCeilingFitOptions(options: CeilingFitOptions = {}): ResolvedCeilingFitOptions {
  const resolved = {
    steps: options.steps ?? 400,
    learningRate: options.learningRate ?? 0.03,
    hiddenSize: options.hiddenSize ?? 32,
    secondChoicesPerTask: options.secondChoicesPerTask ?? 2,
    reportEvery: options.reportEvery ?? 100,
    seed: options.seed ?? 'ceiling',
    runtime: options.runtime ?? {},
    onReport: options.onReport,
    signal: options.signal,
  };
  wholeNumber('CeilingFitOptions.steps', resolved.steps, { min: 0, max: 1_000_000 });
  finiteNumber('CeilingFitOptions.learningRate', resolved.learningRate, { above: 0 });
  wholeNumber('CeilingFitOptions.hiddenSize', resolved.hiddenSize, { min: 1, max: 4096 });
  wholeNumber('CeilingFitOptions.secondChoicesPerTask', resolved.secondChoicesPerTask, { min: 0, max: 1000 });
  wholeNumber('CeilingFitOptions.reportEvery', resolved.reportEvery, { min: 1, max: 1_000_000 });
  requireOption(typeof resolved.seed === 'string' && resolved.seed.length > 0, 'CeilingFitOptions.seed', 'a non-empty string', resolved.seed);
  return resolved;
}

/** One learned choice to fit: its candidates' features and which of them solve the task. */
export interface LabelledDecision {
  readonly taskId: string;
  /** 'first', or 'after <edit id>' for a second choice after that edit failed. */
  readonly at: string;
  /** One row per candidate (mutable, as a PolicyDecision's). */
  readonly features: number[][];
  readonly solving: readonly number[];
}

/**
 * The training decisions: each task's first choice, and up to `secondChoicesPerTask` second choices, each after a
 * failed try of a different edit (drawn without replacement from the seed), where the episode leaves room for one.
 */
export function trainingDecisions(labels: readonly TaskLabel[], secondChoicesPerTask: number, seed: string): LabelledDecision[] {
  const decisions: LabelledDecision[] = [];
  for (const label of labels) {
    if (label.noChoice !== null) continue;
    const labelOf = candidateIndex(label);
    const decisionAt = (observation: RepairObservation, at: string): { decision: LabelledDecision; candidates: readonly CandidateEdit[] } | null => {
      const point = atChoicePoint(observation);
      if ('outcome' in point) return null;
      const solving = point.candidates.flatMap((edit, i) => (labelOf(edit).solves ? [i] : []));
      return { decision: { taskId: label.taskId, at, features: candidateFeatures(point.candidates, observation), solving }, candidates: point.candidates };
    };
    const first = choiceObservation(label, EPISODE_MAX_TURNS);
    const start = decisionAt(first, 'first');
    if (!start) continue;
    decisions.push(start.decision);
    const failed = start.candidates.filter((edit) => tryOutcome(labelOf(edit), first) === null);
    for (const edit of drawWithoutReplacement(failed, secondChoicesPerTask, seededRandom(`${seed}/second/${label.taskId}`))) {
      const second = decisionAt(afterFailedTry(first, edit), `after ${edit.id}`);
      if (second) decisions.push(second.decision);
    }
  }
  return decisions;
}

/** Up to `count` items drawn without replacement (a partial Fisher-Yates shuffle), in the order drawn. */
export function drawWithoutReplacement<T>(items: readonly T[], count: number, random: () => number): T[] {
  const pool = [...items];
  const drawn: T[] = [];
  while (drawn.length < count && pool.length > 0) drawn.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return drawn;
}

/**
 * One full-batch step's samples: one per solving candidate of each decision, chosen with the log-probability the
 * current parameters give it (so every ratio is 1, inside the clip, and the surrogate's gradient is the
 * log-likelihood's) and advantage 1/k among its k solving candidates (each decision weighs the same).
 */
export function likelihoodSamples(decisions: readonly LabelledDecision[], logProbs: readonly (readonly number[])[]): PolicySample[] {
  return decisions.flatMap((decision, b) =>
    decision.solving.map((chosen) => ({ decisions: [{ features: decision.features, chosen, logprob: logProbs[b]![chosen]! }], advantage: 1 / decision.solving.length, weight: 1 })),
  );
}

/** log of the probability the decision's solving candidates hold together. */
export function solvingLogProbability(solving: readonly number[], logProbs: readonly number[]): number {
  const chosen = solving.map((i) => logProbs[i]!);
  const max = Math.max(...chosen);
  return max + Math.log(chosen.reduce((sum, logProb) => sum + Math.exp(logProb - max), 0));
}

export interface CurvePoint {
  readonly step: number;
  /** Mean over the learnable training decisions of the log-probability of their solving set; null without one. */
  readonly trainLogLikelihood: number | null;
  /** The greedy policy on the training tasks. */
  readonly train: Rates;
  /** The greedy policy on the held-out tasks. */
  readonly held: Rates;
}

export interface CeilingFit {
  readonly options: Omit<ResolvedCeilingFitOptions, 'onReport' | 'signal'>;
  /** Training decisions (first and second choices). */
  readonly decisions: number;
  /** Those with a solving candidate, the only ones with a gradient. */
  readonly learnableDecisions: number;
  /** Samples per step: one per solving candidate. */
  readonly samples: number;
  readonly curve: readonly CurvePoint[];
  /** The last point of the curve: the fitted policy. */
  readonly final: CurvePoint;
  readonly params: OnnxParams;
}

/** The policy's greedy choice (its most probable edit; ties drawn from a stream seeded per task), as `learn` evaluates it. */
export function greedyChooser(scorer: OnnxScorer, params: OnnxParams, seed: string): Chooser {
  return (label) => {
    const random = seededRandom(`${seed}/greedy/${label.taskId}`);
    return async (candidates, observation) => {
      const [logProbs] = await scorer.logProbs(params, [candidateFeatures(candidates, observation)]);
      return greedyIndex(logProbs!, random);
    };
  };
}

/**
 * Fits the ONNX repair policy's own MLP to the training labels by maximum likelihood of the solving edits (the
 * policy as it would be if told every verdict), through the PPO update model, and measures it greedily on the
 * training and held-out tasks every `reportEvery` steps: how far these features can take the policy.
 */
export async function fitCeiling(trainLabels: readonly TaskLabel[], heldLabels: readonly TaskLabel[], options: CeilingFitOptions = {}): Promise<CeilingFit> {
  const settings = resolveCeilingFitOptions(options);
  const { onReport, signal, ...reported } = settings;
  const decisions = trainingDecisions(trainLabels, settings.secondChoicesPerTask, settings.seed);
  const learnable = decisions.filter((decision) => decision.solving.length > 0);
  const [scorer, trainer] = await Promise.all([OnnxScorer.create(settings.runtime), OnnxTrainer.create(settings.runtime)]);
  try {
    let params = initialParams(settings.seed, { hiddenSize: settings.hiddenSize });
    let adamState = freshAdamState(params);
    const logProbsOf = (current: OnnxParams): Promise<number[][]> => (learnable.length ? scorer.logProbs(current, learnable.map((decision) => decision.features)) : Promise.resolve([]));
    const curve: CurvePoint[] = [];
    const measure = async (step: number): Promise<void> => {
      const logProbs = await logProbsOf(params);
      const likelihood = learnable.length ? learnable.reduce((sum, decision, b) => sum + solvingLogProbability(decision.solving, logProbs[b]!), 0) / learnable.length : null;
      const chooser = greedyChooser(scorer, params, settings.seed);
      const point = { step, trainLogLikelihood: likelihood, train: await tryRates(trainLabels, chooser), held: await tryRates(heldLabels, chooser) };
      curve.push(point);
      onReport?.(point);
    };
    await measure(0);
    for (let step = 1; step <= settings.steps; step++) {
      signal?.throwIfAborted();
      if (learnable.length > 0) {
        const samples = likelihoodSamples(learnable, await logProbsOf(params));
        ({ params, adamState } = await trainer.update(params, adamState, samples, { learningRate: settings.learningRate, epochs: 1 }));
      }
      if (step % settings.reportEvery === 0 || step === settings.steps) await measure(step);
    }
    const samples = learnable.reduce((sum, decision) => sum + decision.solving.length, 0);
    return { options: reported, decisions: decisions.length, learnableDecisions: learnable.length, samples, curve, final: curve.at(-1)!, params };
  } finally {
    await Promise.all([scorer.release(), trainer.release()]);
  }
}
