import {
  adamStep,
  checkpointDigest,
  FEATURE_NAMES,
  freshAdam,
  LINEAR_REPAIR_POLICY,
  surrogateGradient,
  type AdamState,
  type PolicySample,
} from '../../policies/index.js';
import { nowIso, type PolicyCheckpoint, type PolicyDecision } from '../../schemas/index.js';
import { StateStore, StreamProcessor, type ProcessorContext } from '../runtime/index.js';

export interface LearnerOptions {
  runId: string;
  /** Samples (trajectories with their reward) per update. @default 16 */
  batchSize?: number;
  /** Samples whose policy version lags the learner by more than this are stale. @default 4 */
  maxStaleness?: number;
  /** 'drop' discards stale samples; 'importance-weight' keeps them, corrected by the PPO ratio. @default 'drop' */
  staleSamples?: 'drop' | 'importance-weight';
  /** @default 0.1 */
  learningRate?: number;
}

/** A trajectory's learned choices and its reward, joined by trajectory id as each side arrives. */
interface PendingSample {
  decisions?: PolicyDecision[];
  policyVersion?: number;
  reward?: number;
  advantage?: number;
}

interface LearnerState {
  version: number;
  weights: number[];
  adam: AdamState;
}

/**
 * Joins trajectories with their rewards, and every `batchSize` complete samples takes one clipped
 * policy-gradient step with Adam and publishes the new PolicyCheckpoint. The join buffer and the
 * optimizer state are changelog-backed stores committed with the checkpoint and the consumed offsets,
 * so a learner killed at any moment resumes without losing or double-counting a sample.
 */
export function createLearner(context: ProcessorContext, options: LearnerOptions): StreamProcessor<'trajectories' | 'rewards'> {
  const batchSize = options.batchSize ?? 16;
  const maxStaleness = options.maxStaleness ?? 4;
  const staleSamples = options.staleSamples ?? 'drop';
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`LearnerOptions.batchSize must be a whole number >= 1, got ${batchSize}`);
  if (!Number.isInteger(maxStaleness) || maxStaleness < 0) throw new Error(`LearnerOptions.maxStaleness must be a whole number >= 0, got ${maxStaleness}`);

  const pending = new StateStore<PendingSample>('pending', context.names.changelog('learner', 'pending'));
  const optimizer = new StateStore<LearnerState>('optimizer', context.names.changelog('learner', 'optimizer'));
  const stateOf = (): LearnerState => optimizer.get('state') ?? { version: 0, weights: FEATURE_NAMES.map(() => 0), adam: freshAdam(FEATURE_NAMES.length) };

  return new StreamProcessor(
    context,
    { name: 'learner', inputs: ['trajectories', 'rewards'], stores: [pending, optimizer] as StateStore<unknown>[], maxRecordsPerTransaction: 50 },
    async ({ record }) => {
      const id = record.value.trajectoryId;
      const sample = { ...(pending.get(id) ?? {}) };
      if (record.topicKey === 'trajectories') {
        sample.decisions = record.value.steps.flatMap((step) => (step.decision ? [step.decision] : []));
        sample.policyVersion = record.value.lineage.policyVersion ?? 0;
      } else {
        sample.reward = record.value.reward;
        sample.advantage = record.value.advantage;
      }
      pending.put(id, sample);

      const ready = pending.entries().filter(([, s]) => s.decisions !== undefined && s.advantage !== undefined);
      if (ready.length < batchSize) return [];

      const state = stateOf();
      let staleDropped = 0;
      const samples: PolicySample[] = [];
      for (const [key, s] of ready) {
        pending.delete(key);
        const stale = state.version - (s.policyVersion ?? 0) > maxStaleness;
        if (stale && staleSamples === 'drop') {
          staleDropped++;
          continue;
        }
        samples.push({ decisions: s.decisions!, advantage: s.advantage!, weight: 1 });
      }
      const gradient = surrogateGradient(state.weights, samples);
      const step = adamStep(state.weights, gradient, state.adam, { learningRate: options.learningRate ?? 0.1 });
      const version = state.version + 1;
      optimizer.put('state', { version, weights: step.weights, adam: step.state });

      const rewards = ready.map(([, s]) => s.reward ?? 0);
      const body = { policyId: LINEAR_REPAIR_POLICY, version, featureNames: [...FEATURE_NAMES], weights: step.weights };
      const checkpoint: PolicyCheckpoint = {
        ...body,
        parentVersion: state.version,
        sha256: checkpointDigest(body),
        metrics: {
          samples: samples.length,
          meanReward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
          meanAbsAdvantage: samples.reduce((sum, s) => sum + Math.abs(s.advantage), 0) / Math.max(1, samples.length),
          gradNorm: Math.sqrt(gradient.reduce((sum, g) => sum + g * g, 0)),
          staleDropped,
        },
        lineage: { taskId: 'all', attempt: 0, runId: options.runId, policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
      };
      return [{ topic: 'policyCheckpoints', key: LINEAR_REPAIR_POLICY, value: checkpoint }];
    },
  );
}
