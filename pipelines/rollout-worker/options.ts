import type { TreeStore } from '../../connectors/artifacts/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ENVIRONMENTS, type AgentProgramDeps, type EnvRegistry } from '../../envs/index.js';
import type { Policy, ResolvedLlmPolicyOptions, ServedEnvs } from '../../policies/index.js';
import { wholeNumber } from '../../schemas/index.js';
import { SANDBOX_RETRY, type Accept, type MembershipOptions, type RetryOptions } from '../runtime/index.js';

/** Where a worker gets its policy between episodes (a PolicyTracker following the checkpoint topic), and what it serves. */
export interface PolicySource {
  readonly kind: { readonly policyId: string; readonly serves: ServedEnvs };
  current(): Policy<unknown>;
}

/** The rollout worker's defaults, named once: the loop and `trialrun run rollout-worker` take theirs from here. */
export const ROLLOUT_WORKER_DEFAULTS = {
  groupSize: 4,
  maxTurns: 14,
  concurrency: 2,
  instanceId: '0',
  timeoutMs: 600_000,
  storeTreesAboveBytes: 256 * 1024,
  lanes: 1,
} as const;

export interface RolloutWorkerOptions extends MembershipOptions {
  runId: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  policies: PolicySource;
  /** Samples per task (G), all under one policy version. @default 4 */
  groupSize?: number;
  /** Tool calls per episode. @default 14 */
  maxTurns?: number;
  /** Samples of one task run at once. @default the llm policy's concurrentEpisodes (with `llm`), else 2 */
  concurrency?: number;
  /** @default '0' */
  instanceId?: string;
  /** @default SANDBOX_RETRY: long enough to ride out a Docker engine restart */
  retry?: RetryOptions;
  /** Budget for a whole task (all G samples), waiting for `admit` included. @default llmTaskTimeoutMs (with `llm`), else 600000 */
  timeoutMs?: number;
  /**
   * The llm policy's settings, when that is the policy rolled out: its episodes' count at once and wall-clock
   * budget set the defaults of `concurrency` and `timeoutMs`. @default none
   */
  llm?: Pick<ResolvedLlmPolicyOptions, 'concurrentEpisodes' | 'maxEpisodeMs'>;
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

/** The settings of a rollout worker that have defaults and checks: what can be resolved before any service exists. */
export type RolloutWorkerSettings = Pick<RolloutLanesOptions, 'groupSize' | 'maxTurns' | 'concurrency' | 'instanceId' | 'retry' | 'timeoutMs' | 'llm' | 'environments' | 'storeTreesAboveBytes' | 'lanes'>;

/** A rollout worker's settings with their defaults, checked. */
export interface ResolvedRolloutWorker {
  readonly groupSize: number;
  readonly maxTurns: number;
  readonly concurrency: number;
  readonly instanceId: string;
  readonly retry: RetryOptions;
  readonly timeoutMs: number;
  readonly environments: EnvRegistry;
  readonly storeTreesAboveBytes: number;
  readonly lanes: number;
}

/**
 * A task's budget (all G samples) under the llm policy: its episodes run `concurrentEpisodes` at a time, each
 * within its wall-clock budget, plus time for the sandboxes and the last tool calls.
 */
export function llmTaskTimeoutMs(llm: Pick<ResolvedLlmPolicyOptions, 'concurrentEpisodes' | 'maxEpisodeMs'>, groupSize: number): number {
  return Math.ceil(groupSize / llm.concurrentEpisodes) * (llm.maxEpisodeMs + 120_000);
}

/**
 * Resolves and checks a rollout worker's settings; each refusal is a ConfigError naming the option, made before
 * anything is consumed (the CLI resolves them before the stack or Kafka is touched).
 */
export function resolveRolloutWorker(options: RolloutWorkerSettings): ResolvedRolloutWorker {
  const groupSize = wholeNumber('RolloutWorkerOptions.groupSize', options.groupSize ?? ROLLOUT_WORKER_DEFAULTS.groupSize, { min: 1 });
  // One is enough: a single-turn episode is one reply; the turn cap is the environment's to apply.
  const maxTurns = wholeNumber('RolloutWorkerOptions.maxTurns', options.maxTurns ?? ROLLOUT_WORKER_DEFAULTS.maxTurns, { min: 1 });
  const concurrency = wholeNumber('RolloutWorkerOptions.concurrency', options.concurrency ?? options.llm?.concurrentEpisodes ?? ROLLOUT_WORKER_DEFAULTS.concurrency, { min: 1 });
  const timeoutMs = wholeNumber('RolloutWorkerOptions.timeoutMs', options.timeoutMs ?? (options.llm ? llmTaskTimeoutMs(options.llm, groupSize) : ROLLOUT_WORKER_DEFAULTS.timeoutMs), { min: 1 });
  const storeTreesAboveBytes = wholeNumber('RolloutWorkerOptions.storeTreesAboveBytes', options.storeTreesAboveBytes ?? ROLLOUT_WORKER_DEFAULTS.storeTreesAboveBytes, { min: 0 });
  const lanes = wholeNumber('RolloutLanesOptions.lanes', options.lanes ?? ROLLOUT_WORKER_DEFAULTS.lanes, { min: 1 });
  return {
    groupSize,
    maxTurns,
    concurrency,
    instanceId: options.instanceId ?? ROLLOUT_WORKER_DEFAULTS.instanceId,
    retry: options.retry ?? SANDBOX_RETRY,
    timeoutMs,
    environments: options.environments ?? ENVIRONMENTS,
    storeTreesAboveBytes,
    lanes,
  };
}
