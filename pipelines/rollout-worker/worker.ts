import { inlineTreeBytes, resolveStoredTrees } from '../../connectors/artifacts/index.js';
import { checkTaskPayload, type Environment } from '../../envs/index.js';
import { checkPairing, seededRandom, type Policy } from '../../policies/index.js';
import { ConfigError, mapLimit, nowIso, type Trajectory } from '../../schemas/index.js';
import { allAnswer, storeAnswers, StreamProcessor, type Output, type ProcessorContext } from '../runtime/index.js';
import { runEpisode } from './episode.js';
import { resolveRolloutWorker, type ResolvedRolloutWorker, type RolloutLanesOptions, type RolloutWorkerOptions } from './options.js';

export type { PolicySource, RolloutLanesOptions, RolloutWorkerOptions } from './options.js';

/**
 * A rollout worker of `lanes` members, for a process that rolls out several tasks at once. One lane is
 * createRolloutWorker itself, under its own instance id; more lanes are named `<instanceId>.<lane>`, stable
 * across restarts (with kafkajs the transactional id fences a restarted lane's predecessor). The worker is
 * stateless, so any number of instances may share its group with either client.
 */
export function createRolloutWorkerLanes(context: ProcessorContext, options: RolloutLanesOptions): StreamProcessor<'tasks'>[] {
  const resolved = resolveRolloutWorker(options);
  if (resolved.lanes === 1) return [rolloutWorker(context, options, resolved)];
  return Array.from({ length: resolved.lanes }, (_, lane) => rolloutWorker(context, options, { ...resolved, instanceId: `${resolved.instanceId}.${lane}` }));
}

/**
 * Consumes tasks and rolls each out G times in fresh sandboxes with the newest policy, publishing one
 * trajectory per sample. A task's G trajectories and its offset commit in one transaction.
 */
export function createRolloutWorker(context: ProcessorContext, options: RolloutWorkerOptions): StreamProcessor<'tasks'> {
  return rolloutWorker(context, options, resolveRolloutWorker(options));
}

/** One rollout worker (one lane) over its settings as resolved once. */
function rolloutWorker(context: ProcessorContext, options: RolloutWorkerOptions, resolved: ResolvedRolloutWorker): StreamProcessor<'tasks'> {
  const { groupSize, maxTurns, concurrency, environments, storeTreesAboveBytes: storeAbove } = resolved;
  // A policy that cannot act in an expected environment is refused before anything is consumed.
  for (const envId of options.envIds ?? []) checkPairing(options.policies.kind, environments.get(envId).id);

  return new StreamProcessor(
    context,
    {
      name: 'rollout-worker',
      inputs: ['tasks'],
      instanceId: resolved.instanceId,
      maxRecordsPerTransaction: 1,
      // Within each fetched batch, higher-priority tasks are rolled out first (Task.priority: higher runs first).
      priority: (task) => task.priority,
      retry: resolved.retry,
      timeoutMs: resolved.timeoutMs,
      accept: options.accept,
      sessionTimeoutMs: options.sessionTimeoutMs,
      // A task failing on a host whose engine is down is handed to the group's other workers; one failing while the
      // tree store (S3) does not answer waits, uncommitted, until it does: neither is the task's fault.
      hostAvailable: allAnswer(options.pool.reachable?.bind(options.pool), storeAnswers(options.trees)),
    },
    async ({ record, signal }) => {
      // Refusals here are ConfigErrors (not retriable): the task becomes a dead letter that says why.
      const spec = environments.get(record.value.envId);
      checkPairing(options.policies.kind, spec.id);
      if (spec.agentProgram && !options.agentProgram) throw new ConfigError(`environment ${spec.id} runs an agent program, and this rollout worker has none: give it one (demo --agent mini-swe-agent, or --agent-command <cmd>)`);
      const task = await resolveStoredTrees(record.value, options.trees ?? null);
      checkTaskPayload(spec, task);
      await options.admit?.(signal);
      // One policy snapshot per group: GRPO compares samples of the same policy version.
      const policy = options.policies.current() as Policy<unknown>;
      const groupId = `${options.runId}/${task.taskId}/${record.partition}-${record.offset}`;
      const trajectories = await mapLimit(
        Array.from({ length: groupSize }, (_, attempt) => attempt),
        concurrency,
        async (attempt): Promise<Output> => {
          const env: Environment<unknown> = spec.create({ pool: options.pool, runId: options.runId, imageFor: options.imageFor, maxTurns, agentProgram: options.agentProgram });
          const trajectoryId = `${groupId}/${attempt}`;
          const episode = await runEpisode(spec, env, () => env.init(task, signal), policy, seededRandom(trajectoryId), signal);
          // A large final tree travels as a claim check; its blobs are shared with the task's own tree.
          const finalFilesRef = options.trees && inlineTreeBytes(episode.finalFiles) > storeAbove ? await options.trees.put(episode.finalFiles) : null;
          const trajectory: Trajectory = {
            trajectoryId,
            groupId,
            groupSize,
            envId: task.envId,
            policyId: policy.policyId,
            steps: episode.steps,
            finalFiles: finalFilesRef ? {} : episode.finalFiles,
            ...(finalFilesRef ? { finalFilesRef } : {}),
            finalExtras: episode.finalExtras,
            outcome: episode.outcome,
            error: null,
            totalMs: episode.totalMs,
            sandboxMs: episode.sandboxMs,
            lineage: {
              taskId: task.taskId,
              attempt,
              runId: options.runId,
              policyVersion: policy.version,
              sandboxImageDigest: episode.imageDigest,
              verifierVersion: null,
              createdAt: nowIso(),
            },
          };
          return { topic: 'trajectories', key: task.taskId, value: trajectory };
        },
      );
      return trajectories;
    },
  );
}
