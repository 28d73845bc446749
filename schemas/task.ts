import { z } from 'zod';
import { FileTree, Lineage } from './lineage.js';
import { TreeRef, VerificationSpec } from './verification-spec.js';

/** Where a task row came from in its data set, so a published task can be traced to its source line. */
export const TaskSource = z.object({
  dataset: z.string().min(1),
  /** sha256 of the data set file(s) the job read. */
  datasetHash: z.string().min(1),
  jobRunId: z.string().min(1),
  /** 1-based line (or row) number in the source file. */
  sourceRow: z.number().int().min(1),
});
export type TaskSource = z.infer<typeof TaskSource>;

/**
 * One executable, verifiable task. `hiddenTests` travel on the topic so verifiers can run them, but the
 * rollout worker never writes them into an agent's sandbox.
 */
export const Task = z.object({
  taskId: z.string().min(1),
  /** Registered environment id that knows how to run this task, e.g. `program-repair/v1`. */
  envId: z.string().min(1),
  title: z.string().min(1),
  /** The prompt an agent sees. */
  description: z.string().min(1),
  /** The files an agent starts from (for program repair: the buggy module). */
  files: FileTree,
  visibleTests: FileTree,
  hiddenTests: FileTree,
  /** Files that, written over `files`, pass every hidden test; used for calibration. */
  referenceSolution: FileTree.nullable(),
  tags: z.array(z.string()),
  /** Higher runs first. */
  priority: z.number().int(),
  split: z.enum(['train', 'eval']),
  /** Estimated probability that a policy fails the task, 0..1; null until known. */
  difficulty: z.number().min(0).max(1).nullable(),
  source: TaskSource,
  lineage: Lineage,
  // The fields below are optional so that tasks written before they existed stay valid.
  /** How the task is verified; absent means `PYTEST_REPAIR_VERIFICATION`. */
  verification: VerificationSpec.optional(),
  /**
   * Trees kept in the artifact store rather than inline (claim checks): for each field named here the inline
   * tree is `{}` and the record carries the reference. The task job stores any tree above its size threshold.
   */
  stored: z.partialRecord(z.enum(['files', 'visibleTests', 'hiddenTests', 'referenceSolution']), TreeRef).optional(),
  /**
   * The sandbox image the task runs in (agent and grading sandboxes): a recipe name (`ops`) or a full tag (a task's
   * own image, `trialrun/task-<id>:<hash>`); absent means its environment's default.
   */
  image: z.string().min(1).optional(),
  /** Resources of the task's agent and grading sandboxes (a Harbor task.toml's [environment]); absent: the pool's. */
  limits: z.object({ cpus: z.number().positive().max(64).optional(), memoryBytes: z.number().int().min(16 * 1024 * 1024).optional() }).strict().optional(),
});
export type Task = z.infer<typeof Task>;

/** The task fields that hold file trees, each of which may be stored as a claim check (`Task.stored`). */
export type TaskTreeField = 'files' | 'visibleTests' | 'hiddenTests' | 'referenceSolution';
