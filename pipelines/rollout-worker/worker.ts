import { inlineTreeBytes, resolveStoredTrees, type TreeStore } from '../../connectors/artifacts/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { checkTaskPayload, ENVIRONMENTS, type AgentProgramDeps, type Environment, type EnvRegistry } from '../../envs/index.js';
import { checkPairing, seededRandom, type Policy, type ResolvedLlmPolicyOptions, type ServedEnvs } from '../../policies/index.js';
import { ConfigError, mapLimit, nowIso, wholeNumber, type Trajectory } from '../../schemas/index.js';
import { allAnswer, SANDBOX_RETRY, storeAnswers, StreamProcessor, type Accept, type MembershipOptions, type Output, type ProcessorContext, type RetryOptions } from '../runtime/index.js';
import { runEpisode } from './episode.js';

/** Where a worker gets its policy between episodes (a PolicyTracker following the checkpoint topic), and what it serves. */
export interface PolicySource {
  readonly kind: { readonly policyId: string; readonly serves: ServedEnvs };
  current(): Policy<unknown>;
}

export interface RolloutWorkerOptions extends MembershipOptions {
  runId: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  policies: PolicySource;
  /** Samples per task (G), all under one policy version. @default 4 */
  groupSize?: number;
  /** Tool calls per episode. @default 14 */
  maxTurns?: number;
  /** Samples of one task run at once. @default 2 */
  concurrency?: number;
  /** @default '0' */
  instanceId?: string;
  /** @default SANDBOX_RETRY: long enough to ride out a Docker engine restart */
  retry?: RetryOptions;
  /** Budget for a whole task (all G samples), waiting for `admit` included. @default 600000 */
  timeoutMs?: number;
  /**
   * Called before each task; the rollout starts when it resolves. The loop uses it to bound the trajectories
   * in flight (rolled out, not yet rewarded), so rollouts cannot run ahead of verification and every sample
   * reaches the learner within its staleness bound. @default none: roll out as fast as tasks come
   */
  admit?: (signal: AbortSignal) => Promise<void>;
  /** Which tasks this worker is for; the others are committed past (ProcessorOptions.accept). @default every task */
  accept?: Accept<'tasks'>;
  /**
   * The environments this worker expects: each is checked against the policy when the worker is made, so a
   * mismatched pair stops at start. A task of another environment is a dead letter naming both. @default none checked
   */
  envIds?: readonly string[];
  /** The environments tasks are run in. @default ENVIRONMENTS (every registered one) */
  environments?: EnvRegistry;
  /**
   * The artifact store holding trees kept out of records (claim checks): a task's stored trees are read from it,
   * and a final workspace above `storeTreesAboveBytes` goes into it (`finalFilesRef`). @default none: a task with
   * stored trees is a dead letter saying so, and every final tree is inline
   */
  trees?: TreeStore;
  /**
   * The agent program for environments whose agent is a program (agent-command/v1): its command and the gateway
   * that opens each episode's route. A task of such an environment without it is a dead letter saying so.
   * @default none
   */
  agentProgram?: AgentProgramDeps;
  /** Final trees larger than this as the record would carry them (their JSON: names and contents, UTF-8 bytes) go to `trees` as a claim check. @default 262144 (256 KiB) */
  storeTreesAboveBytes?: number;
}

export interface RolloutLanesOptions extends RolloutWorkerOptions {
  /**
   * Task records this worker rolls out at once, each lane its own group member (consumer) and transactional
   * producer (instance `<instanceId>.<lane>`), so a slow task holds up only its own lane and partitions: the
   * others keep taking tasks while it runs. A lane takes one task at a time, so the worker holds at most
   * `lanes` tasks and `lanes x concurrency` sandboxes (the pool's leases bound what runs on the host). Lanes
   * beyond the tasks topic's partitions (summed over the group's members) get none. @default 1
   */
  lanes?: number;
}

/**
 * A task's budget (all G samples) under the llm policy: its episodes run `concurrentEpisodes` at a time, each
 * within its wall-clock budget, plus time for the sandboxes and the last tool calls.
 */
export function llmTaskTimeoutMs(llm: Pick<ResolvedLlmPolicyOptions, 'concurrentEpisodes' | 'maxEpisodeMs'>, groupSize: number): number {
  return Math.ceil(groupSize / llm.concurrentEpisodes) * (llm.maxEpisodeMs + 120_000);
}

/**
 * A rollout worker of `lanes` members, for a process that rolls out several tasks at once. One lane is
 * createRolloutWorker itself, under its own instance id; more lanes are named `<instanceId>.<lane>`, stable
 * across restarts (with kafkajs the transactional id fences a restarted lane's predecessor). The worker is
 * stateless, so any number of instances may share its group with either client.
 */
export function createRolloutWorkerLanes(context: ProcessorContext, options: RolloutLanesOptions): StreamProcessor<'tasks'>[] {
  const { lanes = 1, ...worker } = options;
  wholeNumber('RolloutLanesOptions.lanes', lanes, { min: 1 });
  if (lanes === 1) return [createRolloutWorker(context, worker)];
  const instanceId = worker.instanceId ?? '0';
  return Array.from({ length: lanes }, (_, lane) => createRolloutWorker(context, { ...worker, instanceId: `${instanceId}.${lane}` }));
}

/**
 * Consumes tasks and rolls each out G times in fresh sandboxes with the newest policy, publishing one
 * trajectory per sample. A task's G trajectories and its offset commit in one transaction.
 */
export function createRolloutWorker(context: ProcessorContext, options: RolloutWorkerOptions): StreamProcessor<'tasks'> {
  const groupSize = options.groupSize ?? 4;
  const maxTurns = options.maxTurns ?? 14;
  const concurrency = options.concurrency ?? 2;
  wholeNumber('RolloutWorkerOptions.groupSize', groupSize, { min: 1 });
  // One is enough: a single-turn episode is one reply; the turn cap is the environment's to apply.
  wholeNumber('RolloutWorkerOptions.maxTurns', maxTurns, { min: 1 });
  wholeNumber('RolloutWorkerOptions.concurrency', concurrency, { min: 1 });
  const environments = options.environments ?? ENVIRONMENTS;
  const storeAbove = options.storeTreesAboveBytes ?? 256 * 1024;
  wholeNumber('RolloutWorkerOptions.storeTreesAboveBytes', storeAbove, { min: 0 });
  // A policy that cannot act in an expected environment is refused before anything is consumed.
  for (const envId of options.envIds ?? []) checkPairing(options.policies.kind, environments.get(envId).id);

  return new StreamProcessor(
    context,
    {
      name: 'rollout-worker',
      inputs: ['tasks'],
      instanceId: options.instanceId ?? '0',
      maxRecordsPerTransaction: 1,
      // Within each fetched batch, higher-priority tasks are rolled out first (Task.priority: higher runs first).
      priority: (task) => task.priority,
      retry: options.retry ?? SANDBOX_RETRY,
      timeoutMs: options.timeoutMs ?? 600_000,
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
