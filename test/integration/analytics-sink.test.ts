import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { before, test } from 'node:test';
import { AnalyticsCatalog, compactStore, listDataFiles, readLedger } from '../../connectors/analytics/index.js';
import { AnalyticsSink } from '../../pipelines/analytics-sink/index.js';
import { syntheticReward, syntheticTrajectory } from './analytics-fixtures.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { killMidFile, POISON, produceTrajectories, rowKeys, sourceOffsets } from './sink-fixtures.js';

before(ensureStack, { timeout: 900_000 });

test('a sink killed with SIGKILL mid-file, again and again, lands every row exactly once and dead-letters poison once', { timeout: 300_000 }, async () => {
  const context = await freshContext('sink-kill');
  const dataDir = tempDir('sink-kill');
  await produceTrajectories(context, 0, 600, 'run-a');
  await sendRaw(context, 'trajectories', [{ key: 'task-000', value: POISON }, { key: 'task-001', value: POISON }]);

  await killMidFile(context, dataDir);
  await produceTrajectories(context, 600, 1200, 'run-b');
  await killMidFile(context, dataDir);
  await sendRaw(context, 'trajectories', [{ key: 'task-002', value: POISON }]);
  await killMidFile(context, dataDir);

  const expected = await sourceOffsets(context);
  assert.equal(expected.rows.length, 1200);
  assert.equal(expected.poison.length, 3);

  // A last, clean run finishes the job: it writes by age, so the ledger reaches the end of every partition.
  const topic = context.names.name('trajectories');
  const admin = context.kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const sink = new AnalyticsSink(context, { dataDir, topics: ['trajectories'], rollBytes: 40_000, rollAgeMs: 300, sessionTimeoutMs: 6000, onDeadLetter: () => undefined });
  await sink.start();
  try {
    await eventually('every partition landed', async () => ends.every((p) => readLedger(dataDir, topic, p.partition) === BigInt(p.high) - 1n), 60_000);
  } finally {
    await sink.stop();
  }

  const landed = await rowKeys(dataDir);
  assert.equal(landed.count, 1200, 'no row twice, none skipped');
  assert.deepEqual(landed.keys, expected.rows);
  const letters = await readAll(context, 'deadLetters');
  assert.deepEqual(letters.map((l) => `${l.partition}:${l.offset}`).sort(), expected.poison, 'each poison record dead-lettered exactly once');
  assert.ok(letters.every((l) => l.processor === 'analytics-sink' && l.error.stage === 'decode'));

  // Folders by run and hour; names carry topic, partition and offsets.
  const files = listDataFiles(join(dataDir, 'trajectories'));
  assert.deepEqual([...new Set(files.map((f) => f.bucket))].sort(), [
    join('run_id=run-a', 'hour=2025-01-01T00'),
    join('run_id=run-a', 'hour=2025-01-01T01'),
    join('run_id=run-b', 'hour=2025-01-01T00'),
    join('run_id=run-b', 'hour=2025-01-01T01'),
  ]);
  assert.ok(files.every((f) => f.topic === context.names.name('trajectories')));

  // Compaction merges the many small files; every query answers the same, and a leftover input of an
  // interrupted compaction is ignored by readers and deleted by the next compaction.
  const summary = `SELECT run_id, count(*), sum(num_steps), sum(CAST(_offset AS BIGINT)), min(created_at), max(created_at) FROM trajectories GROUP BY 1 ORDER BY 1`;
  const before = await queryAll(dataDir, [summary, 'SELECT count(*) FROM steps']);
  const spare = join(tempDir('sink-spare'), basename(files[0]!.path));
  cpSync(files[0]!.path, spare);
  const reports = await compactStore(dataDir, { tables: ['trajectories'], smallFileBytes: 1_000_000, targetFileBytes: 10_000_000 });
  assert.equal(reports[0]!.filesAfter, 4 * 3, 'one file per folder and partition');
  assert.ok(reports[0]!.filesBefore > reports[0]!.filesAfter);
  assert.equal(listDataFiles(join(dataDir, 'trajectories')).length, 12);
  assert.deepEqual(await queryAll(dataDir, [summary, 'SELECT count(*) FROM steps']), before);
  mkdirSync(join(dataDir, 'trajectories', files[0]!.bucket), { recursive: true });
  cpSync(spare, files[0]!.path);
  assert.deepEqual(await queryAll(dataDir, [summary, 'SELECT count(*) FROM steps']), before, 'a superseded file is not read');
  const again = await compactStore(dataDir, { tables: ['trajectories'] });
  assert.equal(again[0]!.supersededRemoved, 1);
  assert.equal(existsSync(files[0]!.path), false);
});

async function queryAll(dataDir: string, queries: string[]): Promise<unknown[]> {
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const results = [];
    for (const sql of queries) results.push((await catalog.query(sql)).rows);
    return results;
  } finally {
    catalog.close();
  }
}

test('files roll by size while records stream in, and by age when they stop', { timeout: 120_000 }, async () => {
  const context = await freshContext('sink-roll');
  const dataDir = tempDir('sink-roll');
  const rewards = await Promise.all(Array.from({ length: 300 }, (_, i) => context.serde.encode('rewards', syntheticReward(i, { runId: 'roll' }))));
  const perRecord = rewards[0]!.length;
  await sendRaw(context, 'rewards', rewards.map((value, i) => ({ key: `t${i}`, value })));

  const bySize = new AnalyticsSink(context, { dataDir, topics: ['rewards'], rollBytes: perRecord * 25, rollAgeMs: 3_600_000 });
  await bySize.start();
  try {
    await eventually('all records read', async () => (bySize.rowsWritten.get('rewards') ?? 0) + bySize.bufferedRecords === 300, 60_000);
    assert.ok(bySize.filesWritten >= 9, `files of about 25 records each while reading (${bySize.filesWritten})`);
    assert.ok(bySize.bufferedRecords < 3 * 25, 'only the tail of each partition waits');
  } finally {
    await bySize.stop();
  }
  assert.equal(bySize.rowsWritten.get('rewards'), 300, 'stop writes the tail');

  await sendRaw(context, 'rewards', rewards.slice(0, 5).map((value, i) => ({ key: `late${i}`, value })));
  const byAge = new AnalyticsSink(context, { dataDir, topics: ['rewards'], rollBytes: 1 << 30, maxBufferedBytes: 1 << 30, rollAgeMs: 500 });
  await byAge.start();
  try {
    await eventually('age-rolled files', async () => byAge.rowsWritten.get('rewards') === 5, 30_000);
  } finally {
    await byAge.stop();
  }
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    assert.deepEqual((await catalog.query('SELECT count(*)::INT, count(DISTINCT reward_id)::INT FROM rewards')).rows, [[305, 300]]);
  } finally {
    catalog.close();
  }
});

test('a flush that fails while landing in the background is rewound: its records are read again and land exactly once', { timeout: 300_000 }, async () => {
  const context = await freshContext('sink-fail');
  const dataDir = tempDir('sink-fail');
  const rewards = await Promise.all(Array.from({ length: 200 }, (_, i) => context.serde.encode('rewards', syntheticReward(i, { runId: 'fail' }))));
  await sendRaw(context, 'rewards', rewards.map((value, i) => ({ key: `t${i}`, value })));
  // A file where the run's folder belongs: every flush fails to write its files until it goes.
  const obstacle = join(dataDir, 'rewards', 'run_id=fail');
  mkdirSync(join(dataDir, 'rewards'), { recursive: true });
  writeFileSync(obstacle, 'not a folder');

  const sink = new AnalyticsSink(context, { dataDir, topics: ['rewards'], rollBytes: rewards[0]!.length * 20, rollAgeMs: 300, onDeadLetter: () => undefined });
  await sink.start();
  try {
    await eventually('a flush failed', async () => sink.landingFailures > 0, 60_000, 50);
    assert.equal(sink.filesWritten, 0);
    rmSync(obstacle);
    const admin = context.kafka.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(context.names.name('rewards')).finally(() => admin.disconnect());
    await eventually('every partition landed', async () => ends.every((p) => readLedger(dataDir, context.names.name('rewards'), p.partition) === BigInt(p.high) - 1n), 240_000);
  } finally {
    await sink.stop();
  }
  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    assert.deepEqual((await catalog.query(`SELECT count(*)::INT, count(DISTINCT _partition || ':' || _offset)::INT, count(DISTINCT reward_id)::INT FROM rewards`)).rows, [[200, 200, 200]], 'no row twice, none skipped');
  } finally {
    catalog.close();
  }
});
