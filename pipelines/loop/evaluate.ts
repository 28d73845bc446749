import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { makeEnv, type RepairObservation } from '../../envs/index.js';
import { seededRandom, type Policy } from '../../policies/index.js';
import { nowIso, resolveRetryOptions, withRetries, type Task } from '../../schemas/index.js';
import { runEpisode } from '../rollout-worker/index.js';
import { Verifier } from '../verifier/index.js';

export interface EvaluateOptions {
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  /** @default 'eval' */
  runId?: string;
  /** Episodes per task. @default 2 */
  samplesPerTask?: number;
  /** Tool calls per episode ("success within N turns"). @default 14 */
  maxTurns?: number;
  /** Episodes at once. @default 2 */
  concurrency?: number;
  /** Seeds the episodes, so two policies are compared on the same random streams. @default 'eval' */
  seed?: string;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface Evaluation {
  readonly policyVersion: number;
  readonly episodes: number;
  readonly successes: number;
  readonly successRate: number;
  readonly byTask: Readonly<Record<string, { episodes: number; successes: number }>>;
}

const RETRY = resolveRetryOptions({ retries: 2, initialDelayMs: 1000, maxDelayMs: 10_000 });

/**
 * Success rate of a policy on held-out tasks within N turns: every episode runs in a fresh sandbox and is
 * judged by the verifier (hidden tests), exactly as in training, but nothing is published or learned.
 */
export async function evaluatePolicy(policy: Policy<RepairObservation>, tasks: readonly Task[], options: EvaluateOptions): Promise<Evaluation> {
  const samples = options.samplesPerTask ?? 2;
  const signal = options.signal ?? new AbortController().signal;
  const runId = options.runId ?? 'eval';
  const byId = new Map(tasks.map((task) => [task.taskId, task]));
  const verifier = new Verifier({ runId, pool: options.pool, imageFor: options.imageFor, tasks: { get: (id: string) => byId.get(id)! } });
  const jobs = tasks.flatMap((task) => Array.from({ length: samples }, (_, attempt) => ({ task, attempt })));
  const byTask: Record<string, { episodes: number; successes: number }> = {};
  let done = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < jobs.length) {
      const { task, attempt } = jobs[next++]!;
      const trajectoryId = `${options.seed ?? 'eval'}/${task.taskId}/${attempt}`;
      // A transient sandbox failure (the engine restarting, say) reruns the episode, as the rollout worker would.
      const verification = await withRetries(async () => {
        const env = makeEnv(task.envId, { pool: options.pool, runId, imageFor: options.imageFor, maxTurns: options.maxTurns ?? 14 });
        const episode = await runEpisode(env, () => env.init(task, signal), policy as Policy<unknown>, seededRandom(trajectoryId), signal);
        const trajectory = {
          trajectoryId, groupId: trajectoryId, groupSize: 1, envId: task.envId, policyId: policy.policyId, steps: episode.steps, finalFiles: episode.finalFiles,
          outcome: episode.outcome, error: null, totalMs: episode.totalMs, sandboxMs: episode.sandboxMs,
          lineage: { taskId: task.taskId, attempt, runId, policyVersion: policy.version, sandboxImageDigest: episode.imageDigest, verifierVersion: null, createdAt: nowIso() },
        };
        return verifier.verify(trajectory, signal);
      }, RETRY, signal);
      const entry = (byTask[task.taskId] ??= { episodes: 0, successes: 0 });
      entry.episodes++;
      if (verification.passed) entry.successes++;
      options.onProgress?.(++done, jobs.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, lane));
  const successes = Object.values(byTask).reduce((sum, t) => sum + t.successes, 0);
  return { policyVersion: policy.version, episodes: jobs.length, successes, successRate: jobs.length ? successes / jobs.length : 0, byTask };
}
