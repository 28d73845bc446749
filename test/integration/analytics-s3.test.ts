import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, Socket, type Server } from 'node:net';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { AnalyticsCatalog, compactStore, openLake, type Lake } from '../../connectors/analytics/index.js';
import { ensureS3Bucket, type S3StoreOptions } from '../../connectors/storage/index.js';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import type { ProcessorContext } from '../../pipelines/runtime/index.js';
import { ConfigError, STACK_S3_ACCESS_KEY_ID, STACK_S3_SECRET_ACCESS_KEY, STACK_S3_URL, TOPICS } from '../../schemas/index.js';
import { LoopWatcher, resolveDashboardOptions } from '../../dashboard/index.js';
import { s3Component } from '../../stack/index.js';
import { syntheticReward } from './analytics-fixtures.js';
import { ensureStack, eventually, freshContext, readAll, runCli, sendRaw, tempDir, type CliRun } from './harness.js';
import { killMidFile, POISON, produceTrajectories, rowKeys, sourceOffsets } from './sink-fixtures.js';

/**
 * The analytics sink, compaction and the catalog with the lake on the stack's real S3 server (SeaweedFS), each test
 * under a prefix of its own in a bucket of this file's own.
 */
const bucket = `it-lake-${randomUUID().slice(0, 8)}`;
const lakeUrl = (label: string): string => `s3://${bucket}/${label}-${randomUUID().slice(0, 8)}`;

before(async () => {
  await ensureStack();
  await s3Component().ensure((line) => console.log(`# ${line}`));
  await ensureS3Bucket(`s3://${bucket}`, { endpoint: STACK_S3_URL });
}, { timeout: 900_000 });

async function partitionEnds(context: ProcessorContext, key: 'trajectories' | 'rewards'): Promise<Array<{ partition: number; high: string }>> {
  const admin = context.kafka.admin();
  await admin.connect();
  return admin.fetchTopicOffsets(context.names.name(key)).finally(() => admin.disconnect());
}

async function landedEverywhere(lake: Lake, topic: string, ends: ReadonlyArray<{ partition: number; high: string }>): Promise<boolean> {
  for (const end of ends) if ((await lake.readLedger(topic, end.partition)) !== BigInt(end.high) - 1n) return false;
  return true;
}

test('on S3: a sink killed with SIGKILL mid-file, twice, lands every row exactly once; compact merges there; the catalog reads it with httpfs', { timeout: 300_000 }, async () => {
  const context = await freshContext('s3-sink-kill');
  const dataDir = lakeUrl('kill');
  await produceTrajectories(context, 0, 600, 'run-a');
  await sendRaw(context, 'trajectories', [{ key: 'task-000', value: POISON }]);
  await killMidFile(context, dataDir);
  await produceTrajectories(context, 600, 1200, 'run-b');
  await killMidFile(context, dataDir);

  const expected = await sourceOffsets(context);
  assert.equal(expected.rows.length, 1200);
  const topic = context.names.name('trajectories');
  const ends = await partitionEnds(context, 'trajectories');
  const lake = openLake(dataDir, 'test');
  try {
    const sink = new AnalyticsSink(context, { dataDir, topics: ['trajectories'], rollBytes: 40_000, rollAgeMs: 300, sessionTimeoutMs: 6000, onDeadLetter: () => undefined });
    await sink.start();
    try {
      await eventually('every partition landed on S3', () => landedEverywhere(lake, topic, ends), 60_000);
    } finally {
      await sink.stop();
    }
    const landed = await rowKeys(dataDir);
    assert.equal(landed.count, 1200, 'no row twice, none skipped');
    assert.deepEqual(landed.keys, expected.rows);
    const letters = await readAll(context, 'deadLetters');
    assert.deepEqual(letters.map((l) => `${l.partition}:${l.offset}`), expected.poison, 'the poison record dead-lettered exactly once');

    const files = await lake.listDataFiles('trajectories');
    assert.ok(files.every((file) => file.path.startsWith(`${dataDir}/trajectories/run_id=`)), 'objects under the lake prefix, laid out as on disk');
    const summary = 'SELECT run_id, count(*), sum(num_steps), sum(CAST(_offset AS BIGINT)) FROM trajectories GROUP BY 1 ORDER BY 1';
    const query = async (): Promise<unknown> => {
      const catalog = await AnalyticsCatalog.open(dataDir, { requireData: true });
      try {
        return (await catalog.query(summary)).rows;
      } finally {
        catalog.close();
      }
    };
    const before = await query();
    const reports = await compactStore(dataDir, { tables: ['trajectories'], smallFileBytes: 1_000_000, targetFileBytes: 10_000_000 });
    assert.equal(reports[0]!.filesAfter, 4 * 3, 'one object per folder and partition');
    assert.ok(reports[0]!.filesBefore > reports[0]!.filesAfter);
    assert.equal((await lake.listDataFiles('trajectories')).length, 12);
    assert.deepEqual(await query(), before, 'compaction on S3 changes no answer');
  } finally {
    lake.close();
  }
});

/** A TCP relay to the S3 server that can be cut (every connection dropped, new ones refused) and restored. */
class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async up(): Promise<void> {
    const target = new URL(STACK_S3_URL);
    this.server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(Number(target.port), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async down(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server?.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

test('on S3: an unreachable server delays landing (retriable: nothing committed, nothing dead-lettered), and the sink lands everything once it answers', { timeout: 300_000 }, async () => {
  const context = await freshContext('s3-sink-down');
  const dataDir = lakeUrl('down');
  const relay = new Relay();
  await relay.up();
  const s3: S3StoreOptions = { endpoint: `http://127.0.0.1:${relay.port}`, accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY, retry: { retries: 2, initialDelayMs: 50, maxDelayMs: 200 }, requestTimeoutMs: 2_000 };
  const rewards = await Promise.all(Array.from({ length: 200 }, (_, i) => context.serde.encode('rewards', syntheticReward(i, { runId: 'down' }))));
  const topic = context.names.name('rewards');
  const committedOffsets = async (): Promise<string[]> => {
    const admin = context.kafka.admin();
    await admin.connect();
    const committed = await admin.fetchGroupOffsets(sink.groupId, [topic]).finally(() => admin.disconnect());
    return committed.flatMap((t) => t.partitions.map((p) => `${p.partition}:${p.offset}`)).sort();
  };
  const sink = new AnalyticsSink(context, { dataDir, s3, topics: ['rewards'], rollBytes: rewards[0]!.length * 20, rollAgeMs: 300, onDeadLetter: () => undefined });
  await sink.start();
  const lake = openLake(dataDir, 'test');
  try {
    // The first half lands while S3 answers, so every partition is under way when it stops answering.
    await sendRaw(context, 'rewards', rewards.slice(0, 100).map((value, i) => ({ key: `t${i}`, value })));
    await eventually('the first half landed', async () => landedEverywhere(lake, topic, await partitionEnds(context, 'rewards')), 60_000);
    const committedBefore = await committedOffsets();
    await relay.down();
    await sendRaw(context, 'rewards', rewards.slice(100).map((value, i) => ({ key: `t${100 + i}`, value })));
    await eventually('a flush failed while S3 was unreachable', async () => sink.landingFailures > 0, 60_000, 50);
    assert.deepEqual(await committedOffsets(), committedBefore, 'no offset committed while S3 was unreachable');
    await relay.up();
    const ends = await partitionEnds(context, 'rewards');
    await eventually('every partition landed once S3 answered', () => landedEverywhere(lake, topic, ends), 240_000);
  } finally {
    await sink.stop();
    await relay.down();
    lake.close();
  }
  assert.deepEqual(await readAll(context, 'deadLetters'), [], 'nothing dead-lettered');
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    assert.deepEqual((await catalog.query(`SELECT count(*)::INT, count(DISTINCT _partition || ':' || _offset)::INT FROM rewards`)).rows, [[200, 200]], 'no row twice, none skipped');
  } finally {
    catalog.close();
  }
});

test('on S3: wrong credentials or a missing bucket is one line at start, before anything is consumed', { timeout: 120_000 }, async () => {
  const context = await freshContext('s3-sink-refused');
  await sendRaw(context, 'rewards', [{ key: 't0', value: await context.serde.encode('rewards', syntheticReward(0, { runId: 'refused' })) }]);
  const cases: Array<[string, S3StoreOptions, RegExp]> = [
    [lakeUrl('creds'), { accessKeyId: 'trialrun', secretAccessKey: 'wrong' }, /refused the credentials/],
    [`s3://${bucket}-none/lake`, {}, /bucket "it-lake-.*-none" does not exist/],
  ];
  for (const [dataDir, s3, message] of cases) {
    const sink = new AnalyticsSink(context, { dataDir, s3, topics: ['rewards'] });
    await assert.rejects(sink.start(), (error: unknown) => error instanceof ConfigError && message.test(error.message) && !error.message.includes('\n'));
  }
  const admin = context.kafka.admin();
  await admin.connect();
  const groups = await admin.listGroups().finally(() => admin.disconnect());
  assert.ok(!groups.some((group) => group === `${context.names.prefix}analytics-sink`), 'the sink never joined its group');
});

/** Runs the CLI as a user would, with `env` on top of the test's (unset TRIALRUN_DEBUG: one-line errors). */
const trialrun = (args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> => runCli(args, { env });

test('on S3: trialrun sql (--data-dir or TRIALRUN_LAKE), compact, export samples and notebook run read the lake from a clean folder', { timeout: 300_000 }, async () => {
  const context = await freshContext('s3-cli');
  const dataDir = lakeUrl('cli');
  const rewards = await Promise.all(Array.from({ length: 60 }, (_, i) => context.serde.encode('rewards', syntheticReward(i, { runId: 'cli' }))));
  await sendRaw(context, 'rewards', rewards.map((value, i) => ({ key: `t${i}`, value })));
  const sink = new AnalyticsSink(context, { dataDir, topics: ['rewards'], rollBytes: rewards[0]!.length * 10, rollAgeMs: 300 });
  await sink.start();
  const lake = openLake(dataDir, 'test');
  try {
    await eventually('every partition landed', async () => landedEverywhere(lake, context.names.name('rewards'), await partitionEnds(context, 'rewards')), 60_000);
  } finally {
    await sink.stop();
    lake.close();
  }
  // A clean state folder: nothing local to read from, only the lake on S3.
  const clean = { TRIALRUN_STATE_DIR: tempDir('s3-cli-state'), TRIALRUN_DATA_DIR: tempDir('s3-cli-data') };
  const query = 'SELECT count(*)::INT AS n, count(DISTINCT reward_id)::INT AS ids FROM rewards';
  for (const [args, env] of [
    [['sql', '--format', 'json', '--data-dir', dataDir, query], clean],
    [['sql', '--format', 'json', query], { ...clean, TRIALRUN_LAKE: dataDir }],
  ] as const) {
    const result = await trialrun(args, env);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { n: 60, ids: 60 });
    assert.match(result.stderr, new RegExp(`read ${dataDir}`));
  }
  const compacted = await trialrun(['compact', '--data-dir', dataDir, '--table', 'rewards'], clean);
  assert.equal(compacted.code, 0, compacted.stderr);
  assert.match(compacted.stdout, /^rewards\s+\d+ -> 3 /m, 'one object per folder and partition');
  const again = await trialrun(['sql', '--format', 'json', '--data-dir', dataDir, query], clean);
  assert.deepEqual(JSON.parse(again.stdout), { n: 60, ids: 60 }, 'compaction changed no answer');
  const out = join(clean.TRIALRUN_DATA_DIR, 'samples.jsonl');
  const exported = await trialrun(['export', 'samples', '--format', 'jsonl', '--out', out, '--data-dir', dataDir], clean);
  // This lake holds rewards only: export reads it from S3 and says it has no LLM samples (as it does for a folder).
  assert.equal(exported.code, 2, exported.stderr);
  assert.match(exported.stderr, /^trialrun export: no training samples: none of the 0 trajectories carries LLM token ids/);
  const reports = join(clean.TRIALRUN_STATE_DIR, 'reports');
  const notebook = await trialrun(['notebook', 'run', 'all', '--data-dir', dataDir, '--out', reports], clean);
  assert.equal(notebook.code, 0, notebook.stderr);
  // The dashboard's watcher lists the lake on S3 and reads the run's rows through the catalog.
  const watcher = new LoopWatcher(context, resolveDashboardOptions({ dataDir, runId: 'cli' }));
  await watcher.start();
  try {
    assert.equal(watcher.current.runId, 'cli');
    assert.equal(watcher.current.stages.find((stage) => stage.stage === TOPICS.rewards.name)?.landed, 60, JSON.stringify(watcher.current.problems));
  } finally {
    await watcher.close();
  }
  const refused = await trialrun(['sql', '--data-dir', dataDir, query], { ...clean, AWS_ACCESS_KEY_ID: 'trialrun', AWS_SECRET_ACCESS_KEY: 'wrong' });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^trialrun sql: [^\n]*refused the credentials[^\n]*\n$/);
});
