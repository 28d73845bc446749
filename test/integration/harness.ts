import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogTopics, committedPastLastRecord, createKafka, ensureTopics, type KafkaOptions, readTopic } from '../../connectors/kafka/index.js';
import { TopicSerde } from '../../connectors/registry/index.js';
import { prepareTopics, type ProcessorContext } from '../../pipelines/runtime/index.js';
import { topicNames, type TopicKey, type TopicValue } from '../../schemas/index.js';
import { repoRoot } from '../../cli/paths.js';
import { stackUp } from '../../stack/index.js';

/** Brings up whatever the tests need (idempotent; fast when already running). */
export async function ensureStack(): Promise<void> {
  await stackUp((line) => console.log(`# ${line}`));
}

/**
 * A context on fresh, randomly prefixed topics (created, schemas registered), so tests never share data. `configs`
 * sets topic settings of chosen catalog topics beyond the catalog's (a small max.message.bytes, say).
 */
export async function freshContext(label: string, kafka: Pick<KafkaOptions, 'client'> = {}, configs: Partial<Record<TopicKey, Record<string, string>>> = {}): Promise<ProcessorContext> {
  const names = topicNames(`it-${label}-${randomUUID().slice(0, 8)}.`);
  const context = { kafka: createKafka({ clientId: `it-${label}`, ...kafka }), serde: new TopicSerde(names), names };
  const tuned = Object.keys(configs) as TopicKey[];
  if (tuned.length > 0) {
    const admin = context.kafka.admin();
    await admin.connect();
    // catalogTopics keeps the order of the keys it is given.
    await ensureTopics(admin, catalogTopics(names, tuned).map((spec, i) => ({ ...spec, config: { ...spec.config, ...configs[tuned[i]!] } }))).finally(() => admin.disconnect());
  }
  await prepareTopics(context);
  return context;
}

export const tempDir = (label: string): string => mkdtempSync(join(tmpdir(), `trialrun-${label}-`));

/**
 * Every committed record of a topic, decoded and contract-checked. A record that fails to decode throws,
 * unless `skipInvalid` (for topics a test poisoned on purpose).
 */
export async function readAll<K extends TopicKey>(context: ProcessorContext, key: K, options: { skipInvalid?: boolean } = {}): Promise<TopicValue<K>[]> {
  const values: TopicValue<K>[] = [];
  const raw: Buffer[] = [];
  // readTopic settles the end first: tests read straight after the commits they check.
  await readTopic(context.kafka, { topic: context.names.name(key), onRecord: ({ value }) => void (value && raw.push(value)) });
  for (const bytes of raw) {
    try {
      values.push(await context.serde.decode(key, bytes));
    } catch (error) {
      if (!options.skipInvalid) throw error;
    }
  }
  return values;
}

/** Polls `probe` until it returns true or the deadline passes. */
export async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 120_000, intervalMs = 500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * True once consumer group `groupId` has committed past every committed record of the topic. Under
 * exactly-once processing the outputs of those records committed with those offsets: from then on no
 * output of theirs, duplicate or not, can appear, so a test can count them without waiting "a while".
 */
export function committedPastEnd(context: ProcessorContext, groupId: string, key: TopicKey): Promise<boolean> {
  return committedPastLastRecord(context.kafka, groupId, context.names.name(key));
}

/** Sends raw bytes (for poison records) straight to a topic. */
export async function sendRaw(context: ProcessorContext, key: TopicKey, messages: Array<{ key: string; value: Buffer }>): Promise<void> {
  const producer = context.kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: context.names.name(key), messages });
  } finally {
    await producer.disconnect();
  }
}

/** What a CLI run left: its exit status and its output. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `node bin/trialrun.js ...args` as a user runs it, in its own process: the settings a test's environment may carry
 * (data and state folders, topic prefix, debug) are unset, then `env` is given.
 */
export function runCli(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['TRIALRUN_DATA_DIR', 'TRIALRUN_STATE_DIR', 'TRIALRUN_TOPIC_PREFIX', 'TRIALRUN_DEBUG']) delete env[name];
  Object.assign(env, options.env);
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), ...args], { env, cwd: options.cwd ?? repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }));
  });
}
