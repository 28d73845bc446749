import assert from 'node:assert/strict';
import { test } from 'node:test';
import { syntheticTrajectory } from '../../test/integration/analytics-fixtures.js';
import { JsonRowEncoder, ParquetWriter, recordLinesOf, type ValueColumn } from './parquet.js';
import { TRAJECTORIES } from './tables.js';
import type { CellValue } from './tables.js';

type R = Record<string, CellValue>;
const column = (name: string, type: ValueColumn<R>['type']): ValueColumn<R> => ({ name, type, value: (row) => row[name] ?? null });
const line = (columns: ValueColumn<R>[], row: R): unknown => JSON.parse(new JsonRowEncoder(columns).encode(row));

test('encodes each column by its type: exact int64, times as UTC ISO with milliseconds, nulls kept', () => {
  const columns = [column('s', 'utf8'), column('i', 'int64'), column('f', 'float64'), column('b', 'bool'), column('t', 'timestamp'), column('never', 'utf8')];
  assert.deepEqual(line(columns, { s: 'héllo "q"\n', i: 3, f: 1.5, b: true, t: '2025-01-02T03:04:05.678Z' }), { s: 'héllo "q"\n', i: 3, f: 1.5, b: true, t: '2025-01-02T03:04:05.678Z', never: null });
  assert.deepEqual(line(columns, { s: null, i: 9007199254740993n, f: null, b: false, t: 0 }), { s: null, i: '9007199254740993', f: null, b: false, t: '1970-01-01T00:00:00.000Z', never: null });
  assert.deepEqual(line(columns, { i: 12n, t: '2025-01-02T03:04:05.678912Z' }), { s: null, i: 12, f: null, b: null, t: '2025-01-02T03:04:05.678Z', never: null }, 'finer times are cut to milliseconds, the column precision');
});

test('a time already in the written form goes as it is; any other form, or a day some months lack, is parsed and written out', () => {
  const columns = [column('t', 'timestamp')];
  assert.deepEqual(line(columns, { t: '2025-01-02T03:04:05.678Z' }), { t: '2025-01-02T03:04:05.678Z' });
  assert.deepEqual(line(columns, { t: '2025-01-02T05:04:05.678+02:00' }), { t: '2025-01-02T03:04:05.678Z' });
  assert.deepEqual(line(columns, { t: '2025-01-31T23:59:59.999Z' }), { t: '2025-01-31T23:59:59.999Z' });
  assert.deepEqual(line(columns, { t: '2025-02-30T00:00:00.000Z' }), { t: '2025-03-02T00:00:00.000Z' }, 'as Date reads it: DuckDB never gets a day February lacks');
  assert.throws(() => new JsonRowEncoder(columns).encode({ t: '2025-13-01T00:00:00.000Z' }), /column "t": "2025-13-01T00:00:00.000Z" is not a time/);
});

test('encodes lists of scalars and lists of structs with only the declared fields', () => {
  const columns = [
    column('tags', { listOf: 'utf8' }),
    column('steps', { listOf: [{ name: 'index', type: 'int64' }, { name: 'at', type: 'timestamp' }, { name: 'ok', type: 'bool' }] }),
  ];
  assert.deepEqual(line(columns, { tags: ['a', 'b'], steps: [{ index: 0, at: 1000, ok: true, extra: 'x' } as never, { index: 1n, at: null, ok: null }] }), {
    tags: ['a', 'b'],
    steps: [
      { index: 0, at: '1970-01-01T00:00:01.000Z', ok: true },
      { index: 1, at: null, ok: null },
    ],
  });
  assert.deepEqual(line(columns, { tags: [], steps: null }), { tags: [], steps: null });
});

test('refuses a value its column cannot take, naming the column', () => {
  assert.throws(() => new JsonRowEncoder([column('n', 'int64')]).encode({ n: 1.5 }), /column "n": 1.5 is not a whole number/);
  assert.throws(() => new JsonRowEncoder([column('t', 'timestamp')]).encode({ t: 'yesterday' }), /column "t": "yesterday" is not a time/);
  assert.throws(() => new JsonRowEncoder([column('l', { listOf: 'utf8' })]).encode({ l: 'x' }), /column "l": expected a list/);
  assert.throws(() => new JsonRowEncoder([column('b', 'bool')]).encode({ b: 'yes' }), /column "b": yes is not true or false/);
  assert.throws(() => new JsonRowEncoder([column('s', { listOf: [{ name: 'n', type: 'int64' }] })]).encode({ s: [{ n: 0.5 }] }), /column "s\[\]\.n": 0.5 is not a whole number/);
});

test('a struct field may be a list of scalars (a sample\'s token ids); int32 takes 32-bit whole numbers only', () => {
  const columns = [column('samples', { listOf: [{ name: 'ids', type: { listOf: 'int32' } }, { name: 'logprobs', type: { listOf: 'float64' } }] })];
  assert.deepEqual(line(columns, { samples: [{ ids: [1, 2n, -1], logprobs: [-0.5] }, { ids: null, logprobs: [] }] }), {
    samples: [
      { ids: [1, 2, -1], logprobs: [-0.5] },
      { ids: null, logprobs: [] },
    ],
  });
  assert.throws(() => new JsonRowEncoder(columns).encode({ samples: [{ ids: [2 ** 31] }] }), /column "samples\[\]\.ids\[\]": 2147483648 is not a 32-bit whole number/);
  assert.throws(() => new JsonRowEncoder(columns).encode({ samples: [{ ids: 3 }] }), /column "samples\[\]\.ids": expected a list/);
});

test('a writer refuses a thread count that is not a whole number >= 1, naming the option', async () => {
  await assert.rejects(ParquetWriter.open({ threads: 0 }), /ParquetWriterOptions\.threads must be a whole number >= 1, got 0/);
  await assert.rejects(ParquetWriter.open({ threads: 1.5 }), /ParquetWriterOptions\.threads must be a whole number >= 1, got 1.5/);
});

test('a record line keeps the bytes as written, and prints again only what would break the staged file', () => {
  const lines = recordLinesOf(TRAJECTORIES);
  const meta = { topic: 't.trajectories', partition: 2, offset: '41' };
  const record = syntheticTrajectory(1, { steps: 1 });
  const staged = (json: Buffer, input: unknown = JSON.parse(json.toString('utf8'))): string => Buffer.concat(lines.line(input, json, meta, () => record)).toString('utf8');
  const compact = Buffer.from(JSON.stringify(record));
  assert.equal(staged(compact), `{"m":{"topic":"t.trajectories","partition":2,"offset":41},"r":${compact.toString('utf8')}}\n`);
  const pretty = Buffer.from(JSON.stringify(record, null, 2));
  assert.equal(staged(pretty), staged(compact), 'line breaks between tokens: printed again on one line');
  const pair = Buffer.from(JSON.stringify({ ...record, error: 'x' }).replace('"error":"x"', '"error":"\\ud83d\\ude00"'));
  assert.ok(staged(pair).includes('\\ud83d\\ude00'), 'a surrogate pair is well formed: its escape stays');
  const lone = Buffer.from(JSON.stringify({ ...record, error: 'x' }).replace('"error":"x"', '"error":"a\\ud800b"'));
  assert.equal(JSON.parse(staged(lone)).r.error, 'a\ufffdb', 'a lone surrogate becomes U+FFFD');
  const latin1 = Buffer.from(JSON.stringify({ ...record, error: 'caf_' }));
  latin1[latin1.indexOf('caf_') + 3] = 0xe9;
  assert.equal(JSON.parse(staged(latin1)).r.error, 'caf\ufffd', 'bytes that are not UTF-8 become U+FFFD');
});

test('derived columns are computed only for records that need them', () => {
  let parsed = 0;
  const lines = recordLinesOf(TRAJECTORIES);
  const record = syntheticTrajectory(1, { steps: 1 });
  const json = Buffer.from(JSON.stringify(record));
  const line = Buffer.concat(lines.line(JSON.parse(json.toString('utf8')), json, { topic: 't', partition: 0, offset: '0' }, () => (parsed++, record))).toString('utf8');
  assert.equal(parsed, 0);
  assert.ok(!line.includes('"d":'));
});
