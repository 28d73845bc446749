import { createHash } from 'node:crypto';
import { inTransaction, readTopic, recordLimit, type KafkaPort } from '../../../connectors/kafka/index.js';
import type { TopicSerde } from '../../../connectors/registry/index.js';
import { wholeNumber, type Task, type TopicNames } from '../../../schemas/index.js';
import type { ProcessorContext } from '../../runtime/index.js';

export interface PublishOptions {
  /** Fences an earlier run of the same job that died mid-transaction. @default `<prefix>task-job` */
  transactionalId?: string;
  /** The transaction's timeout; the broker caps it at transaction.max.timeout.ms. @default 300000 */
  transactionTimeoutMs?: number;
  /** Records per produce request inside the transaction, at most. @default 2000 */
  batchSize?: number;
  /**
   * Encoded bytes per produce request, at most: a partition's share of one request must stay under the
   * broker's message.max.bytes (1 MiB by default). A single larger record is sent alone. @default 900000
   */
  requestBytes?: number;
  /** Called after each produce request with records sent so far. */
  onProgress?: (sent: number, total: number) => void;
}

/**
 * What makes a task the task it is: everything an agent or verifier sees, and its split. Lineage, the
 * priority and the difficulty estimate are left out, so a re-run of a job whose data did not change finds
 * every task already published, even as pass rates move.
 */
export function taskFingerprint(task: Task): string {
  const { envId, title, description, files, visibleTests, hiddenTests, referenceSolution, tags, split, stored, verification, image, limits } = task;
  // The newer fields join only when present, so tasks without them keep the fingerprints they were published with.
  const newer: unknown[] = stored || verification || image ? [stored ?? null, verification ?? null, image ?? null] : [];
  if (limits) newer.push(limits);
  return createHash('sha256').update(JSON.stringify([envId, title, description, files, visibleTests, hiddenTests, referenceSolution, tags, split, ...newer])).digest('hex');
}

/** The latest fingerprint of every task on the topic (compaction semantics: the newest record per key wins). */
export async function publishedFingerprints(kafka: KafkaPort, serde: TopicSerde, names: TopicNames): Promise<Map<string, string>> {
  // readTopic settles the end, so a job run straight after another sees that run's tasks (their commit
  // markers may still be on the way) rather than publishing them again.
  const latest = new Map<string, Buffer | null>();
  await readTopic(kafka, { topic: names.name('tasks'), onRecord: ({ key, value }) => void (key !== null && latest.set(key, value)) });
  const fingerprints = new Map<string, string>();
  for (const [key, value] of latest) {
    if (value === null) continue; // a tombstone: the task was withdrawn
    try {
      fingerprints.set(key, taskFingerprint(await serde.decode('tasks', value)));
    } catch {
      // A record that no longer decodes is republished rather than trusted.
    }
  }
  return fingerprints;
}

/**
 * Publishes tasks in one Kafka transaction, keyed by task id, highest priority first (so within each
 * partition workers meet them in priority order): readers see all of them or, if the process dies before
 * the commit, none; the next run with the same transactional id fences and aborts the dead one.
 */
export async function publishTasks(kafka: KafkaPort, serde: TopicSerde, names: TopicNames, tasks: readonly Task[], options: PublishOptions = {}): Promise<number> {
  return (await inOneTransaction(kafka, serde, names, options, async () => tasks)).length;
}

export interface IdempotentPublishReport {
  /** Tasks not on the topic before. */
  readonly added: number;
  /** Tasks on the topic before whose content changed (the compacted topic keeps the new revision). */
  readonly updated: number;
  /** Tasks already on the topic unchanged: not sent again, so no worker rolls them out twice. */
  readonly unchanged: number;
}

/**
 * Publishes only what is new or changed, in one transaction; re-running a job publishes nothing twice.
 * The topic is read after the transactional producer has fenced any earlier run of the job, so a run that
 * died mid-publish is either fully visible or fully aborted by then.
 */
export async function publishNewTasks(kafka: KafkaPort, serde: TopicSerde, names: TopicNames, tasks: readonly Task[], options: PublishOptions = {}): Promise<IdempotentPublishReport> {
  let updated = 0;
  const sent = await inOneTransaction(kafka, serde, names, options, async () => {
    const existing = await publishedFingerprints(kafka, serde, names);
    return tasks.filter((task) => {
      const before = existing.get(task.taskId);
      if (before === undefined) return true;
      if (before === taskFingerprint(task)) return false;
      updated++;
      return true;
    });
  });
  return { added: sent.length - updated, updated, unchanged: tasks.length - sent.length };
}

async function inOneTransaction(
  kafka: KafkaPort,
  serde: TopicSerde,
  names: TopicNames,
  options: PublishOptions,
  choose: () => Promise<readonly Task[]>,
): Promise<readonly Task[]> {
  const batchSize = options.batchSize ?? 2000;
  const requestBytes = options.requestBytes ?? 900_000;
  const transactionTimeout = options.transactionTimeoutMs ?? 300_000;
  wholeNumber('PublishOptions.batchSize', batchSize, { min: 1 });
  wholeNumber('PublishOptions.requestBytes', requestBytes, { min: 1024 });
  wholeNumber('PublishOptions.transactionTimeoutMs', transactionTimeout, { min: 1000 });
  return inTransaction(
    kafka,
    options.transactionalId ?? `${names.prefix}task-job`,
    async (transaction) => {
      const tasks = [...(await choose())].sort((a, b) => b.priority - a.priority || (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
      // Encoding (contract check and registry framing) overlaps the previous request's round trip.
      let inFlight: Promise<void> = Promise.resolve();
      let messages: Array<{ key: string; value: Buffer }> = [];
      let bytes = 0;
      let sent = 0;
      const send = async (): Promise<void> => {
        if (messages.length === 0) return;
        const batch = messages;
        messages = [];
        bytes = 0;
        await inFlight;
        inFlight = transaction.send({ topic: names.name('tasks'), messages: batch }).then(() => {
          sent += batch.length;
          options.onProgress?.(sent, tasks.length);
        });
        // A failure surfaces at the next await of inFlight; this only keeps it from counting as unhandled meanwhile.
        inFlight.catch(() => undefined);
      };
      for (const task of tasks) {
        const value = await serde.encode('tasks', task);
        if (messages.length >= batchSize || (messages.length > 0 && bytes + value.length > requestBytes)) await send();
        messages.push({ key: task.taskId, value });
        bytes += value.length + task.taskId.length;
      }
      await send();
      await inFlight;
      return tasks;
    },
    { transactionTimeoutMs: transactionTimeout },
  );
}

/** What a task record adds beyond its encoded value, at most: the record's own fields and a task id of up to 1 KiB. */
const TASK_RECORD_OVERHEAD_BYTES = 97 + 1024;

/**
 * A job's publish settings with the broker's word on size: maxRecordBytes and requestBytes lowered to what the
 * tasks topic takes (its max.message.bytes, capped by the client's own limit), read from the broker rather than
 * assumed. A dry run has no broker, and keeps the settings as given.
 */
export async function brokerBoundedPublish<P extends { readonly maxRecordBytes: number; readonly requestBytes: number }>(publish: P, context: ProcessorContext | undefined): Promise<P> {
  if (!context) return publish;
  const admin = context.kafka.admin();
  await admin.connect();
  try {
    const limit = await recordLimit(admin, context.names.name('tasks'), context.kafka.client);
    return { ...publish, maxRecordBytes: Math.min(publish.maxRecordBytes, limit - TASK_RECORD_OVERHEAD_BYTES), requestBytes: Math.min(publish.requestBytes, limit - TASK_RECORD_OVERHEAD_BYTES) };
  } finally {
    await admin.disconnect();
  }
}
