import type { RepairObservation } from '../../envs/index.js';
import type { Action, Policy } from '../types.js';
import { editFeatures, FEATURE_NAMES } from './features.js';
import { logSoftmax, sampleIndex } from './softmax.js';

export const LINEAR_REPAIR_POLICY = 'linear-repair';

/**
 * A scripted agent loop with one learned choice: which candidate edit to try next. The script runs the
 * visible tests, lists the edits, then applies an edit, reruns the tests, and either submits (tests pass)
 * or reverts and picks again. The pick samples a softmax over linear scores of the edit's features.
 */
export class LinearRepairPolicy implements Policy<RepairObservation> {
  readonly policyId = LINEAR_REPAIR_POLICY;

  constructor(
    readonly version: number,
    readonly weights: readonly number[],
  ) {
    if (weights.length !== FEATURE_NAMES.length) throw new Error(`LinearRepairPolicy needs ${FEATURE_NAMES.length} weights, got ${weights.length}`);
  }

  static initial(): LinearRepairPolicy {
    return new LinearRepairPolicy(0, FEATURE_NAMES.map(() => 0));
  }

  async act(observation: RepairObservation, random: () => number): Promise<Action> {
    const call = (name: string, args: Record<string, unknown> = {}): Action => ({ action: { name, arguments: args }, decision: null });
    if (observation.lastTests?.passed) return call('submit');
    if (observation.baselineTests === null) return call('run_tests');
    if (observation.edits === null) return call('list_edits');
    if (observation.applied) return observation.lastTests === null ? call('run_tests') : call('revert');
    // An attempt needs three turns (apply, run tests, submit); the env submits by itself at the cap.
    const untried = observation.edits.filter((edit) => !observation.tried.includes(edit.id));
    if (untried.length === 0 || observation.turn + 2 > observation.maxTurns) return call('submit');
    const features = untried.map((edit) => editFeatures(edit, observation));
    const logProbs = logSoftmax(this.weights, features);
    const chosen = sampleIndex(logProbs, random);
    return { action: { name: 'apply_edit', arguments: { id: untried[chosen]!.id } }, decision: { features, chosen, logprob: logProbs[chosen]! } };
  }
}
