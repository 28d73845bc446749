import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import { LINEAR_REPAIR_POLICY, policyKind } from '../../policies/index.js';
import { finiteNumber, oneOf, wholeNumber } from '../../schemas/index.js';
import type { Accept, MembershipOptions } from '../runtime/index.js';

/** The learner's defaults, named once: the loop and `trialrun run learner` take theirs from here. */
export const LEARNER_DEFAULTS = {
  policyId: LINEAR_REPAIR_POLICY,
  batchSize: 16,
  maxStaleness: 4,
  staleSamples: 'drop',
  epochs: 1,
  instanceId: '0',
} as const;

export interface LearnerOptions extends MembershipOptions {
  runId: string;
  /** Where checkpoint artifacts are written. */
  store: CheckpointStore;
  /** Which policy kind to train. @default 'linear-repair' */
  policyId?: string;
  /** Samples (trajectories with their reward) per update. @default 16 */
  batchSize?: number;
  /** Samples whose policy version lags the learner by more than this are stale. @default 4 */
  maxStaleness?: number;
  /** 'drop' discards stale samples; 'importance-weight' keeps them at a weight that decays with their lag. @default 'drop' */
  staleSamples?: 'drop' | 'importance-weight';
  /** Adam step size. @default the policy kind's own (linear-repair 0.1, onnx-repair 0.03) */
  learningRate?: number;
  /** PPO clip range. @default the policy kind's own (0.2) */
  clip?: number;
  /** Ascent steps on each batch (PPO epochs): more learning per sample, bounded by the clip. @default 1 */
  epochs?: number;
  /** Which trajectories and rewards this learner trains on; the others are committed past. @default all */
  accept?: Accept<'trajectories' | 'rewards'>;
  /** This instance's name (ProcessorOptions.instanceId): one is active, the others stand by. @default '0' */
  instanceId?: string;
}

/** The settings of a learner that have defaults and checks: what can be resolved before any service exists. */
export type LearnerSettings = Pick<LearnerOptions, 'policyId' | 'batchSize' | 'maxStaleness' | 'staleSamples' | 'learningRate' | 'clip' | 'epochs' | 'instanceId'>;

/** A learner's settings with their defaults, checked. */
export interface ResolvedLearner {
  /** A registered policy kind that trains in this process. */
  readonly policyId: string;
  readonly batchSize: number;
  readonly maxStaleness: number;
  readonly staleSamples: 'drop' | 'importance-weight';
  /** Left to the policy kind when not given. */
  readonly learningRate: number | undefined;
  readonly clip: number | undefined;
  readonly epochs: number;
  readonly instanceId: string;
}

/**
 * Resolves and checks a learner's settings; each refusal is a ConfigError naming the option, made before anything
 * is consumed (the loop and the CLI resolve them before a topic is touched).
 */
export function resolveLearner(options: LearnerSettings): ResolvedLearner {
  const policyId = options.policyId ?? LEARNER_DEFAULTS.policyId;
  // An unknown kind is refused here, by the registry, with the kinds it has.
  policyKind(policyId);
  const learningRate = options.learningRate === undefined ? undefined : finiteNumber('LearnerOptions.learningRate', options.learningRate, { above: 0 });
  const clip = options.clip === undefined ? undefined : finiteNumber('LearnerOptions.clip', options.clip, { above: 0 });
  return {
    policyId,
    batchSize: wholeNumber('LearnerOptions.batchSize', options.batchSize ?? LEARNER_DEFAULTS.batchSize, { min: 1 }),
    maxStaleness: wholeNumber('LearnerOptions.maxStaleness', options.maxStaleness ?? LEARNER_DEFAULTS.maxStaleness, { min: 0 }),
    staleSamples: oneOf('LearnerOptions.staleSamples', options.staleSamples ?? LEARNER_DEFAULTS.staleSamples, ['drop', 'importance-weight']),
    learningRate,
    clip,
    epochs: wholeNumber('LearnerOptions.epochs', options.epochs ?? LEARNER_DEFAULTS.epochs, { min: 1 }),
    instanceId: options.instanceId ?? LEARNER_DEFAULTS.instanceId,
  };
}
