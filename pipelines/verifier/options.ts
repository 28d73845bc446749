import type { TreeStore } from '../../connectors/artifacts/index.js';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { ConfigError, wholeNumber, type Task } from '../../schemas/index.js';

/** Where tasks are looked up by id; a `GlobalTable<'tasks'>` or a plain map for batch jobs. */
export interface TaskLookup {
  get(taskId: string): Task;
}

export interface VerifierOptions {
  runId: string;
  pool: SandboxPool;
  imageFor: (recipe: string) => string;
  tasks: TaskLookup;
  /** Processor instance id (the verifier processor only). @default '0' */
  instanceId?: string;
  /** Wall-clock budget of one test run inside the sandbox, in ms. @default 20000 */
  timeoutMs?: number;
  /**
   * Runs of each task's reference solution before the task's verifications count. A task whose
   * verdict changes between runs is quarantined as flaky, one whose reference fails as broken; 0 skips
   * the check (no quarantine is ever decided). @default 3
   */
  referenceRuns?: number;
  /**
   * Where trees kept as claim checks are read from: a task's `stored` trees and a trajectory's `finalFilesRef`.
   * @default null (a task or trajectory that needs the store is refused with a ConfigError naming it)
   */
  trees?: TreeStore | null;
}

export interface ResolvedVerifierOptions extends Required<VerifierOptions> {}

export function resolveVerifierOptions(options: VerifierOptions): ResolvedVerifierOptions {
  const resolved = { instanceId: '0', timeoutMs: 20_000, referenceRuns: 3, trees: null, ...options };
  wholeNumber('VerifierOptions.timeoutMs', resolved.timeoutMs, { min: 1000, max: 600_000, unit: 'ms' });
  wholeNumber('VerifierOptions.referenceRuns', resolved.referenceRuns, { min: 0, max: 50 });
  if (!resolved.runId) throw new ConfigError('VerifierOptions.runId must not be empty');
  return resolved;
}
