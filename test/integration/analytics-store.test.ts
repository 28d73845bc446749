import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnalyticsCatalog, bucketOf, dataFileName, duckdbType, LLM_SAMPLE_FIELDS, ParquetWriter, recordLinesOf, REWARDS, TRAJECTORIES, writeParquetRows, type Row, type TableSpec } from '../../connectors/analytics/index.js';
import type { Reward, Trajectory } from '../../schemas/index.js';
import { main } from '../../cli/main.js';
import { syntheticReward, syntheticTrajectory } from './analytics-fixtures.js';
import { tempDir } from './harness.js';

/** Writes rows where the sink would, for one run and one offset range of partition 0. */
async function land<R extends { lineage: { runId: string; createdAt: string } }>(dataDir: string, table: string, topic: string, spec: TableSpec<R>, records: R[], first: number): Promise<void> {
  const rows: Row<R>[] = records.map((record, i) => ({ record, meta: { topic, partition: 0, offset: String(first + i) } }));
  const range = { topic, partition: 0, first: BigInt(first), last: BigInt(first + records.length - 1) };
  await writeParquetRows(join(dataDir, table, bucketOf(records[0]!.lineage.runId, records[0]!.lineage.createdAt), dataFileName(range)), spec, rows);
}

test('the catalog: nested steps, a column added later, run filters and the steps view', async () => {
  const dataDir = tempDir('store');
  const a = Array.from({ length: 5 }, (_, i) => syntheticTrajectory(i, { runId: 'run-a', steps: 3 }));
  const b = Array.from({ length: 4 }, (_, i) => syntheticTrajectory(10 + i, { runId: 'run-b', steps: 2 }));
  await land<Trajectory>(dataDir, 'trajectories', 't.trajectories', TRAJECTORIES, a, 0);
  await land<Trajectory>(dataDir, 'trajectories', 't.trajectories', TRAJECTORIES, b, 5);
  // An older file, written before the reward table had its last columns.
  const rewards = Array.from({ length: 3 }, (_, i) => syntheticReward(i, { runId: 'run-a' }));
  const older = REWARDS.columns.filter((c) => !['disposition', 'reason', 'rescore_id', 'hacked', 'fraction_passed'].includes(c.name));
  await land<Reward>(dataDir, 'rewards', 't.rewards', { ...REWARDS, columns: older }, rewards, 0);
  await land<Reward>(dataDir, 'rewards', 't.rewards', REWARDS, [syntheticReward(3, { runId: 'run-a' })], 3);

  const catalog = await AnalyticsCatalog.open(dataDir);
  try {
    const rows = async (sql: string) => (await catalog.query(sql)).rows;
    assert.deepEqual(await rows('SELECT count(*)::INT, sum(len(steps))::INT FROM trajectories'), [[9, 5 * 3 + 4 * 2]]);
    assert.deepEqual(await rows(`SELECT steps[2].tool, steps[2].index::INT, steps[1].started_at::VARCHAR FROM trajectories WHERE trajectory_id = 'run-a/t0'`), [
      [a[0]!.steps[1]!.toolCall.name, 1, '2025-01-01 00:00:00'],
    ]);
    assert.deepEqual(await rows(`SELECT count(*)::INT FROM steps`), [[23]]);
    assert.deepEqual(await rows(`SELECT step_index::INT, tool, candidates::INT FROM steps WHERE trajectory_id = 'run-b/t10' ORDER BY 1`), [
      [0, b[0]!.steps[0]!.toolCall.name, 6],
      [1, b[0]!.steps[1]!.toolCall.name, null],
    ]);
    assert.deepEqual(await rows(`SELECT count(*)::INT, count(disposition)::INT, count(rescore_id)::INT FROM rewards`), [[4, 1, 0]], 'a column missing from older files reads as NULL there');
    const shape = await catalog.query('SELECT * FROM trajectories LIMIT 0');
    assert.equal(
      shape.types![shape.columns.indexOf('steps')]!.replaceAll('"', ''),
      'STRUCT(index BIGINT, started_at TIMESTAMP, tool VARCHAR, arguments VARCHAR, ok BOOLEAN, exit_code BIGINT, truncated BOOLEAN, output VARCHAR, observation VARCHAR, duration_ms DOUBLE, sandbox_ms DOUBLE, chosen BIGINT, logprob DOUBLE, candidates BIGINT)[]',
      'steps is a real list of structs',
    );
    assert.deepEqual(await rows('SELECT count(*)::INT FROM tasks'), [[0]], 'a table with no files is empty, with its columns');
  } finally {
    catalog.close();
  }

  const onlyB = await AnalyticsCatalog.open(dataDir, { runIds: ['run-b'] });
  try {
    assert.deepEqual((await onlyB.query('SELECT DISTINCT run_id FROM trajectories')).rows, [['run-b']]);
    assert.equal(onlyB.files.get('trajectories')!.length, 1, 'other runs\' folders are not even read');
    assert.deepEqual((await onlyB.query('SELECT count(*)::INT FROM rewards')).rows, [[0]]);
  } finally {
    onlyB.close();
  }
});

/**
 * Runs `trialrun sql` in this process (a CLI process start costs seconds). Results go to --out files:
 * the test runner reports through this process's stdout, which must not be intercepted.
 */
async function sql(dataDir: string, ...args: string[]): Promise<{ code: number; out: string; stderr: string }> {
  const out = join(tempDir('sql-out'), 'result');
  const err: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => err.push(chunk) > 0) as typeof process.stderr.write;
  try {
    const code = await main(['sql', '--data-dir', dataDir, '--out', out, ...args]);
    return { code, out: existsSync(out) ? readFileSync(out, 'utf8') : '', stderr: err.join('') };
  } finally {
    process.stderr.write = write;
  }
}

test('trialrun sql writes table, CSV, JSON lines and Parquet, and says what is wrong with bad input', async () => {
  const dataDir = tempDir('sql');
  await land<Reward>(dataDir, 'rewards', 't.rewards', REWARDS, Array.from({ length: 3 }, (_, i) => syntheticReward(i, { runId: 'r' })), 0);
  const query = 'SELECT reward_id, reward FROM rewards ORDER BY reward_id';
  assert.match((await sql(dataDir, query)).out, /reward_id\s+\| reward\n-+-\+-+\n.*\n.*\n.*\n\(3 rows\)/);
  assert.equal((await sql(dataDir, '--format', 'csv', query)).out.split('\n')[0], 'reward_id,reward');
  const json = (await sql(dataDir, '--format', 'json', query)).out.trim().split('\n').map((line) => JSON.parse(line) as { reward_id: string; reward: number });
  assert.deepEqual(json.map((r) => r.reward_id), ['r/t0/v-synthetic/reward', 'r/t1/v-synthetic/reward', 'r/t2/v-synthetic/reward']);
  const parquet = join(tempDir('sql-parquet'), 'rewards.parquet');
  assert.equal(await main(['sql', '--data-dir', dataDir, '--format', 'parquet', '--out', parquet, query]), 0);
  assert.equal(readFileSync(parquet).subarray(0, 4).toString(), 'PAR1');
  assert.equal((await sql(dataDir, '--format', 'json', `SELECT count(*)::INT AS n FROM read_parquet('${parquet}')`)).out.trim(), '{"n":3}');
  const badFormat = await sql(dataDir, '--format', 'xml', query);
  assert.equal(badFormat.code, 2);
  assert.match(badFormat.stderr, /^trialrun sql: --format must be one of table, csv, json, parquet, got "xml"$/m);
  // A query DuckDB refuses is the user's to fix: one line, exit 2, no stack trace.
  const badQuery = await sql(dataDir, 'SELECT nope FROM rewards');
  assert.equal(badQuery.code, 2);
  assert.match(badQuery.stderr, /^trialrun sql: .*nope/m);
  assert.doesNotMatch(badQuery.stderr, /\n\s+at /);
});

test('the one Parquet writer: declared types even for all-null columns, text byte for byte, row order, metadata, no temporary files', async () => {
  const topic = 't.trajectories';
  const records: Trajectory[] = Array.from({ length: 2500 }, (_, i) => {
    const trajectory = syntheticTrajectory(i, { runId: 'writer', steps: 2 });
    return { ...trajectory, trajectoryId: `row-${i} "quoted" \\ ünïcode\n`, lineage: { ...trajectory.lineage, createdAt: i % 2 ? '2025-03-04T05:06:07.089Z' : '2025-03-04T05:06:07.089123Z' } };
  });
  const rows: Row<Trajectory>[] = records.map((record, i) => ({ record, meta: { topic, partition: 0, offset: String(i) } }));
  const dir = tempDir('writer');
  const path = join(dir, 'folder', 'x-p0-0-2499.parquet');
  const writer = await ParquetWriter.open();
  try {
    const bytes = await writer.writeRows(path, TRAJECTORIES, rows, { 'trialrun.table': 'trajectories', 'trialrun.first_offset': '0' });
    assert.ok(bytes > 0);
    // Lines staged from the wire's bytes, as the sink stages them, land the same, even from JSON written across lines.
    const lines = recordLinesOf(TRAJECTORIES);
    const wire = (record: Trajectory, pretty: boolean): Buffer => Buffer.from(pretty ? JSON.stringify(record, null, 2) : JSON.stringify(record));
    await writer.writeLines(
      join(dir, 'folder', 'x-p0-2500-2501.parquet'),
      TRAJECTORIES,
      records.slice(0, 2).flatMap((record, i) => lines.line(JSON.parse(wire(record, i === 1).toString()), wire(record, i === 1), { topic, partition: 0, offset: String(2500 + i) }, () => record)),
    );
    // JSON that JavaScript reads and DuckDB refuses, a key twice in one object, lands as JavaScript read it (the last one).
    const twice = Buffer.from(JSON.stringify(records[2]).replace('"error":null', '"error":"first","error":null'));
    assert.ok(twice.includes('"error":"first","error":null'));
    await writer.writeLines(join(dir, 'twice', 'x-p0-2502-2502.parquet'), TRAJECTORIES, [...lines.line(JSON.parse(twice.toString()), twice, { topic, partition: 0, offset: '2502' }, () => records[2]!)]);
  } finally {
    writer.close();
  }
  assert.deepEqual(readdirSync(join(dir, 'folder')).sort(), ['x-p0-0-2499.parquet', 'x-p0-2500-2501.parquet'], 'only the renamed files, no temporary ones');
  assert.deepEqual(readdirSync(join(dir, 'twice')), ['x-p0-2502-2502.parquet']);
  const catalog = await AnalyticsCatalog.open(dir);
  try {
    const rows_ = async (sql: string) => (await catalog.query(sql)).rows;
    const file = `read_parquet('${path}')`;
    const described = new Map((await rows_(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${file})`)).map(([name, type]) => [name, String(type).replaceAll('"', '')]));
    assert.deepEqual(
      [...described.keys()],
      TRAJECTORIES.columns.map((column) => column.name),
    );
    assert.equal(described.get('error'), 'VARCHAR', 'null in every row, and still its declared type');
    assert.equal(described.get('created_at'), 'TIMESTAMP');
    assert.equal(described.get('llm_samples'), duckdbType({ listOf: LLM_SAMPLE_FIELDS }).replaceAll('"', ''), 'a derived column no row needed has its type');
    assert.deepEqual(await rows_(`SELECT trajectory_id, created_at::VARCHAR, error, num_steps::INT, steps[1].arguments, len(llm_samples)::INT, _offset::INT FROM ${file} LIMIT 2`), [
      [records[0]!.trajectoryId, '2025-03-04 05:06:07.089', null, 2, JSON.stringify(records[0]!.steps[0]!.toolCall.arguments), 0, 0],
      [records[1]!.trajectoryId, '2025-03-04 05:06:07.089', null, 2, JSON.stringify(records[1]!.steps[0]!.toolCall.arguments), 0, 1],
    ]);
    assert.deepEqual(await rows_(`SELECT count(*)::INT FROM ${file}`), [[2500]]);
    assert.deepEqual(await rows_(`SELECT trajectory_id, steps[2].output FROM read_parquet('${path}', file_row_number = true) WHERE file_row_number = 1999`), [[records[1999]!.trajectoryId, records[1999]!.steps[1]!.toolResult.output]], 'text comes back byte for byte');
    const order = await rows_(`SELECT list(_offset ORDER BY file_row_number)[2:5] FROM read_parquet('${path}', file_row_number = true)`);
    assert.deepEqual(order, [[['1', '2', '3', '4']]], 'rows keep their order');
    assert.deepEqual(await rows_(`SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata('${path}') ORDER BY 1`), [
      ['trialrun.first_offset', '0'],
      ['trialrun.table', 'trajectories'],
    ]);
    assert.deepEqual(await rows_(`SELECT trajectory_id, error, _offset::INT FROM read_parquet('${join(dir, 'twice', 'x-p0-2502-2502.parquet')}')`), [[records[2]!.trajectoryId, null, 2502]]);
    assert.deepEqual(await rows_(`SELECT trajectory_id, _offset::INT FROM read_parquet('${join(dir, 'folder', 'x-p0-2500-2501.parquet')}') ORDER BY 2`), [
      [records[0]!.trajectoryId, 2500],
      [records[1]!.trajectoryId, 2501],
    ]);
  } finally {
    catalog.close();
  }
});
