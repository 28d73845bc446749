import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Kafka } from '../../connectors/kafka/index.js';
import { readJsonLines, RejectsFile } from '../../connectors/files/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { describeIssues, nowIso, Task, type TopicNames } from '../../schemas/index.js';
import { PROGRAM_REPAIR_ENV } from '../../envs/index.js';
import { RepairTaskRow } from './repair-row.js';

export interface TaskJobOptions {
  /** JSON Lines file of program-repair rows. */
  file: string;
  /** Folder for the rejects file. */
  rejectsDir: string;
  /** Identifies this run in every task's lineage. @default a random UUID */
  jobRunId?: string;
  /** Validate and report without publishing. @default false */
  dryRun?: boolean;
}

export interface TaskJobReport {
  readonly jobRunId: string;
  readonly rowsRead: number;
  readonly rejected: number;
  readonly duplicates: number;
  readonly published: number;
  readonly rejectsFile: string;
  readonly tasks: readonly Task[];
}

/** Whitespace-insensitive content hash, so reformatted copies of one task count as duplicates. */
function contentHash(row: RepairTaskRow): string {
  const normalise = (text: string): string => text.replace(/\s+/g, ' ').trim();
  return createHash('sha256')
    .update([row.buggy_source, row.visible_tests, row.hidden_tests].map(normalise).join('\u0000'))
    .digest('hex');
}

function toTask(row: RepairTaskRow, line: number, dataset: string, datasetHash: string, jobRunId: string): Task {
  return Task.parse({
    taskId: row.id,
    envId: PROGRAM_REPAIR_ENV,
    title: row.title,
    description: row.description,
    files: { [row.module]: row.buggy_source },
    visibleTests: { 'test_visible.py': row.visible_tests },
    hiddenTests: { 'test_hidden.py': row.hidden_tests },
    referenceSolution: { [row.module]: row.fixed_source },
    tags: row.tags,
    priority: row.priority,
    split: row.split,
    difficulty: null,
    source: { dataset, datasetHash, jobRunId, sourceRow: line },
    lineage: { taskId: row.id, attempt: 0, runId: jobRunId, policyVersion: null, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  });
}

/** Reads, validates and deduplicates a task file; rejects go to `<rejectsDir>/<jobRunId>.jsonl` with line and reason. */
export async function prepareTasks(options: TaskJobOptions): Promise<Omit<TaskJobReport, 'published'>> {
  const jobRunId = options.jobRunId ?? randomUUID();
  const lines = await readJsonLines(options.file);
  const dataset = basename(options.file);
  const datasetHash = createHash('sha256').update(readFileSync(options.file)).digest('hex');
  const rejects = new RejectsFile(join(options.rejectsDir, `${jobRunId}.jsonl`));
  const seenIds = new Set<string>();
  const seenContent = new Set<string>();
  const tasks: Task[] = [];
  let duplicates = 0;
  for (const { line, text, validJson } of lines) {
    if (!validJson) {
      rejects.add({ source: options.file, line, reason: 'not valid JSON' });
      continue;
    }
    const parsed = RepairTaskRow.safeParse(JSON.parse(text));
    if (!parsed.success) {
      rejects.add({ source: options.file, line, reason: describeIssues(parsed.error).join('; ') });
      continue;
    }
    const hash = contentHash(parsed.data);
    if (seenContent.has(hash) || seenIds.has(parsed.data.id)) {
      duplicates++;
      rejects.add({ source: options.file, line, reason: seenIds.has(parsed.data.id) ? `duplicate task id ${parsed.data.id}` : 'exact duplicate of an earlier row' });
      continue;
    }
    seenContent.add(hash);
    seenIds.add(parsed.data.id);
    tasks.push(toTask(parsed.data, line, dataset, datasetHash, jobRunId));
  }
  return { jobRunId, rowsRead: lines.length, rejected: rejects.count - duplicates, duplicates, rejectsFile: rejects.path, tasks };
}

/** Publishes a prepared batch in one transaction: all of it becomes visible, or none. */
export async function publishTasks(kafka: Kafka, serde: TopicSerde, names: TopicNames, tasks: readonly Task[]): Promise<number> {
  const producer = kafka.producer({ transactionalId: `${names.prefix}task-job`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const messages = await Promise.all(tasks.map(async (task) => ({ key: task.taskId, value: await serde.encode('tasks', task) })));
    const transaction = await producer.transaction();
    try {
      await transaction.send({ topic: names.name('tasks'), messages });
      await transaction.commit();
    } catch (error) {
      await transaction.abort().catch(() => undefined);
      throw error;
    }
    return messages.length;
  } finally {
    await producer.disconnect();
  }
}

export async function runTaskJob(kafka: Kafka, serde: TopicSerde, names: TopicNames, options: TaskJobOptions): Promise<TaskJobReport> {
  const prepared = await prepareTasks(options);
  const published = options.dryRun ? 0 : await publishTasks(kafka, serde, names, prepared.tasks);
  return { ...prepared, published };
}
