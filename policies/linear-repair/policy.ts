import type { RepairObservation } from '../../envs/index.js';
import { applyEdit, repairMove } from '../repair-script.js';
import type { Action, Decoding, Policy } from '../types.js';
import { editFeatures, FEATURE_NAMES } from './features.js';
import { chooseIndex, logSoftmax } from './softmax.js';

export const LINEAR_REPAIR_POLICY = 'linear-repair';

/**
 * A scripted agent loop with one learned choice: which candidate edit to try next. The script runs the
 * visible tests, lists the edits, then applies an edit, reruns the tests, and either submits (tests pass)
 * or reverts and picks again. The pick samples a softmax over linear scores of the edit's features (or takes
 * its most probable edit, when decoding greedily).
 */
export class LinearRepairPolicy implements Policy<RepairObservation> {
  readonly policyId = LINEAR_REPAIR_POLICY;

  constructor(
    readonly version: number,
    readonly weights: readonly number[],
    private readonly decoding: Decoding = 'sample',
  ) {
    if (weights.length !== FEATURE_NAMES.length) throw new Error(`LinearRepairPolicy needs ${FEATURE_NAMES.length} weights, got ${weights.length}`);
  }

  static initial(): LinearRepairPolicy {
    return new LinearRepairPolicy(0, FEATURE_NAMES.map(() => 0));
  }

  async act(observation: RepairObservation, random: () => number): Promise<Action> {
    const move = repairMove(observation);
    if (move.kind === 'scripted') return move.action;
    const features = move.candidates.map((edit) => editFeatures(edit, observation));
    const logProbs = logSoftmax(this.weights, features);
    const chosen = chooseIndex(logProbs, random, this.decoding);
    return applyEdit(move.candidates[chosen]!, { features, chosen, logprob: logProbs[chosen]! });
  }
}
