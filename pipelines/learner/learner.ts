import { policyKind, type PolicySample } from '../../policies/index.js';
import { nowIso, type PolicyCheckpoint, type PolicyDecision } from '../../schemas/index.js';
import { failureAdvantage } from '../reward/index.js';
import { StateStore, storeAnswers, StreamProcessor, type ProcessorContext } from '../runtime/index.js';
import { resolveLearner, type LearnerOptions } from './options.js';

export type { LearnerOptions } from './options.js';

/** A trajectory's learned choices and its reward, joined by trajectory id as each side arrives. */
interface PendingSample {
  decisions?: PolicyDecision[];
  policyVersion?: number;
  reward?: number;
  advantage?: number;
  /** The reward's group mean; absent in samples buffered before it was kept. */
  groupMean?: number;
  /** Its reward carries no learning signal (no-signal group, quarantined task, late member): drop it once joined. */
  skip?: boolean;
}

/** What the learner must survive a crash with: the newest version's parameters and the optimizer state. */
interface TrainerState {
  version: number;
  params: string;
  optimizer: string;
  /** Stale samples dropped since the newest checkpoint, reported on the next one. */
  staleDropped?: number;
}

/**
 * Joins trajectories with their rewards, and every `batchSize` complete samples takes one clipped
 * policy-gradient step and publishes the new PolicyCheckpoint (its artifact written to the checkpoint
 * store first). The join buffer and the trainer state are changelog-backed stores committed with the
 * checkpoint record and the consumed offsets in one transaction, so a learner killed at any moment
 * resumes without losing or double-counting a sample.
 */
export function createLearner(context: ProcessorContext, options: LearnerOptions): StreamProcessor<'trajectories' | 'rewards'> {
  const { policyId, batchSize, epochs, maxStaleness, staleSamples, learningRate, clip, instanceId } = resolveLearner(options);
  const kind = policyKind(policyId);

  const pending = new StateStore<PendingSample>('pending', context.names.changelog('learner', 'pending'));
  const trainer = new StateStore<TrainerState>('trainer', context.names.changelog('learner', 'trainer'));
  const encodeState = (state: { version: number; params: unknown; optimizer: unknown }): TrainerState => ({
    version: state.version,
    params: kind.encodeParams(state.params).toString('base64'),
    optimizer: kind.encodeOptimizer(state.optimizer).toString('base64'),
  });
  const current = (): { version: number; params: unknown; optimizer: unknown } => {
    const saved = trainer.get(kind.policyId);
    if (!saved) return { version: 0, ...kind.initial() };
    return { version: saved.version, params: kind.decodeParams(Buffer.from(saved.params, 'base64')), optimizer: kind.decodeOptimizer(Buffer.from(saved.optimizer, 'base64')) };
  };

  return new StreamProcessor(
    context,
    { name: 'learner', inputs: ['trajectories', 'rewards'], stores: [pending, trainer] as StateStore<unknown>[], maxRecordsPerTransaction: 50, accept: options.accept, sessionTimeoutMs: options.sessionTimeoutMs, instanceId,
      // A checkpoint that cannot be published while its store (S3) does not answer is not the sample's fault: the
      // transaction (its trainer state included) is aborted and redone once the store answers, nothing dead-lettered.
      hostAvailable: storeAnswers(options.store) },
    async ({ record }) => {
      const id = record.value.trajectoryId;
      const sample = { ...(pending.get(id) ?? {}) };
      if (record.topicKey === 'trajectories') {
        sample.decisions = record.value.steps.flatMap((step) => (step.decision ? [step.decision] : []));
        sample.policyVersion = record.value.lineage.policyVersion ?? 0;
      } else {
        // Re-scored rewards only compare verifier versions; rewards without signal never train.
        if ((record.value.rescoreId ?? null) !== null) return [];
        if ((record.value.disposition ?? 'learn') !== 'learn') sample.skip = true;
        else {
          sample.reward = record.value.reward;
          sample.advantage = record.value.advantage;
          sample.groupMean = record.value.groupMean;
        }
      }
      if (sample.skip && sample.decisions !== undefined) {
        pending.delete(id);
        return [];
      }
      pending.put(id, sample);

      const ready = pending.entries().filter(([, s]) => s.decisions !== undefined && s.advantage !== undefined);
      if (ready.length < batchSize) return [];

      const state = current();
      let staleDropped = trainer.get(kind.policyId)?.staleDropped ?? 0;
      const samples: PolicySample[] = [];
      for (const [key, s] of ready) {
        pending.delete(key);
        const lag = state.version - (s.policyVersion ?? 0);
        if (lag > maxStaleness && staleSamples === 'drop') {
          staleDropped++;
          continue;
        }
        // The PPO ratio already corrects for the behaviour policy; older samples also count for less.
        const weight = lag > maxStaleness ? 0.5 ** (lag - maxStaleness) : 1;
        const earlier = kind.earlierDecisionsFailed && s.groupMean !== undefined ? { earlierAdvantage: failureAdvantage({ reward: s.reward ?? 0, advantage: s.advantage!, groupMean: s.groupMean }) } : {};
        samples.push({ decisions: s.decisions!, advantage: s.advantage!, ...earlier, weight });
      }
      if (samples.length === 0) {
        // Nothing fresh to learn from: a new version would change nothing, and would make every sample in
        // flight one version staler (a run whose samples all arrive late would never learn again).
        trainer.put(kind.policyId, { ...encodeState(state), staleDropped });
        return [];
      }
      const step = await kind.update(state.params, state.optimizer, samples, { learningRate, clip, epochs });
      const version = state.version + 1;
      const params = kind.encodeParams(step.params);
      trainer.put(kind.policyId, { version, params: params.toString('base64'), optimizer: kind.encodeOptimizer(step.optimizer).toString('base64') });
      const artifact = await options.store.put(kind.policyId, version, params);

      const rewards = ready.map(([, s]) => s.reward ?? 0);
      const checkpoint: PolicyCheckpoint = {
        policyId: kind.policyId,
        version,
        parentVersion: state.version,
        featureNames: [...kind.featureNames],
        weights: kind.inlineWeights(step.params),
        sha256: artifact.sha256,
        artifact,
        metrics: {
          samples: samples.length,
          meanReward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
          meanAbsAdvantage: samples.reduce((sum, s) => sum + Math.abs(s.advantage), 0) / Math.max(1, samples.length),
          gradNorm: step.gradNorm,
          staleDropped,
          extra: {},
        },
        lineage: { taskId: 'all', attempt: 0, runId: options.runId, policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
      };
      return [{ topic: 'policyCheckpoints', key: kind.policyId, value: checkpoint }];
    },
  );
}
