import { PROGRAM_REPAIR_ENV, type RepairObservation } from '../../envs/index.js';
import { ConfigError } from '../../schemas/index.js';
import type { PolicyKind } from '../types.js';
import { FEATURE_NAMES } from './features.js';
import { LINEAR_REPAIR_POLICY, LinearRepairPolicy } from './policy.js';
import { adamStep, freshAdam, surrogateGradient, type AdamState } from './update.js';

function parseJson<T>(bytes: Buffer, what: string): T {
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    throw new ConfigError(`${what} is not valid JSON`);
  }
}

/** The linear softmax edit chooser as a policy kind: parameters are one weight per feature, stored as JSON. */
export const linearRepairKind: PolicyKind<RepairObservation, number[], AdamState> = {
  policyId: LINEAR_REPAIR_POLICY,
  serves: [PROGRAM_REPAIR_ENV],
  featureNames: FEATURE_NAMES,
  // The repair script chooses again only after the previous edit failed the visible tests and was reverted.
  earlierDecisionsFailed: true,
  initial: () => ({ params: FEATURE_NAMES.map(() => 0), optimizer: freshAdam(FEATURE_NAMES.length) }),
  encodeParams: (weights) => Buffer.from(JSON.stringify({ policyId: LINEAR_REPAIR_POLICY, featureNames: FEATURE_NAMES, weights })),
  decodeParams: (bytes) => {
    const parsed = parseJson<{ policyId?: string; featureNames?: string[]; weights?: number[] }>(bytes, 'a linear-repair artifact');
    if (parsed.policyId !== LINEAR_REPAIR_POLICY) throw new ConfigError(`artifact is for policy ${parsed.policyId}, not ${LINEAR_REPAIR_POLICY}`);
    if (parsed.featureNames?.join(',') !== FEATURE_NAMES.join(',')) throw new ConfigError('artifact has features that this build does not compute');
    if (!Array.isArray(parsed.weights) || parsed.weights.length !== FEATURE_NAMES.length) throw new ConfigError(`artifact needs ${FEATURE_NAMES.length} weights`);
    return parsed.weights;
  },
  encodeOptimizer: (state) => Buffer.from(JSON.stringify(state)),
  decodeOptimizer: (bytes) => parseJson<AdamState>(bytes, 'linear-repair optimizer state'),
  inlineWeights: (weights) => weights,
  average: (versions) => {
    if (versions.length === 0) throw new ConfigError('linear-repair: averaging needs at least one set of weights');
    const bad = versions.findIndex((weights) => weights.length !== FEATURE_NAMES.length);
    if (bad >= 0) throw new ConfigError(`linear-repair: weights ${bad} have ${versions[bad]!.length} values, not ${FEATURE_NAMES.length}`);
    return FEATURE_NAMES.map((_, i) => versions.reduce((sum, weights) => sum + weights[i]!, 0) / versions.length);
  },
  load: async (weights, version, options) => new LinearRepairPolicy(version, weights, options?.decoding),
  update: async (weights, optimizer, samples, options) => {
    let step = { weights, state: optimizer };
    let gradNorm = 0;
    for (let epoch = 0; epoch < (options.epochs ?? 1); epoch++) {
      const gradient = surrogateGradient(step.weights, samples, options.clip ?? 0.2);
      if (epoch === 0) gradNorm = Math.hypot(...gradient);
      step = adamStep(step.weights, gradient, step.state, options);
    }
    return { params: step.weights, optimizer: step.state, gradNorm };
  },
};
