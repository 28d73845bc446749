import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AnalyticsCatalog } from '../../connectors/analytics/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { repoRoot } from '../../cli/paths.js';
import { syntheticTrajectory } from './analytics-fixtures.js';

/** What the analytics sink tests share, on a lake in a folder or on S3: records to land, and a sink to SIGKILL. */
export const POISON = Buffer.from('this is not a registry-framed record');

export async function produceTrajectories(context: ProcessorContext, from: number, to: number, runId: string): Promise<void> {
  const producer = context.kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    for (let start = from; start < to; start += 100) {
      const messages = [];
      for (let i = start; i < Math.min(to, start + 100); i++) {
        const trajectory = syntheticTrajectory(i, { runId, steps: 3, perVersion: 200, startMs: Date.parse('2025-01-01T00:00:00Z') + (i % 2) * 3_600_000 });
        messages.push({ key: trajectory.lineage.taskId, value: await context.serde.encode('trajectories', trajectory) });
      }
      await producer.send({ topic: context.names.name('trajectories'), messages });
    }
  } finally {
    await producer.disconnect();
  }
}

/** (partition, offset) of every committed record on a topic, split into decodable rows and poison. */
export async function sourceOffsets(context: ProcessorContext): Promise<{ rows: string[]; poison: string[] }> {
  const rows: string[] = [];
  const poison: string[] = [];
  await readTopic(context.kafka, {
    topic: context.names.name('trajectories'),
    onRecord: ({ partition, offset, value }) => void (value?.equals(POISON) ? poison : rows).push(`${partition}:${offset}`),
  });
  return { rows: rows.sort(), poison: poison.sort() };
}

export interface ChildStatus {
  files: number;
  buffered: number;
}

/** The sink in its own process, so it can be killed with SIGKILL like a crashed host. */
export function spawnSink(context: ProcessorContext, dataDir: string, onStatus: (status: ChildStatus) => void): ChildProcess {
  const dist = join(repoRoot(), 'dist');
  const module = (path: string): string => JSON.stringify(pathToFileURL(join(dist, path)).href);
  const script = `
    import ${module('envs/index.js')};
    import { createKafka } from ${module('connectors/kafka/index.js')};
    import { TopicSerde } from ${module('connectors/registry/index.js')};
    import { AnalyticsSink } from ${module('pipelines/analytics-sink/index.js')};
    import { topicNames } from ${module('schemas/index.js')};
    const names = topicNames(${JSON.stringify(context.names.prefix)});
    const context = { kafka: createKafka({ clientId: 'it-sink-child' }), serde: new TopicSerde(names), names };
    const sink = new AnalyticsSink(context, { dataDir: ${JSON.stringify(dataDir)}, topics: ['trajectories'], rollBytes: 40000, rollAgeMs: 3600000, sessionTimeoutMs: 6000, onDeadLetter: () => {} });
    await sink.start();
    setInterval(() => console.log(JSON.stringify({ files: sink.filesWritten, buffered: sink.bufferedRecords })), 20);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let pending = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.startsWith('{')) onStatus(JSON.parse(line) as ChildStatus);
  });
  return child;
}

/** Starts a sink process and SIGKILLs it once it has written files and holds records not yet in a file. */
export async function killMidFile(context: ProcessorContext, dataDir: string): Promise<ChildStatus> {
  let killedAt: ChildStatus | undefined;
  const child = spawnSink(context, dataDir, (status) => {
    if (!killedAt && status.files > 0 && status.buffered > 0) {
      killedAt = status;
      child.kill('SIGKILL');
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = setTimeout(() => child.kill('SIGKILL'), 120_000);
  await exited;
  clearTimeout(deadline);
  assert.ok(killedAt, 'the sink was killed while it held unwritten records');
  return killedAt;
}

export async function rowKeys(dataDir: string): Promise<{ keys: string[]; count: number }> {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const result = await catalog.query(`SELECT _partition || ':' || _offset FROM trajectories`);
    const keys = result.rows.map((row) => String(row[0])).sort();
    return { keys, count: keys.length };
  } finally {
    catalog.close();
  }
}

