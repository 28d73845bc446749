import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toArrowTable } from './arrow.js';
import type { CellValue, Column } from './tables.js';

type R = Record<string, CellValue>;
const column = (name: string, type: Column<R>['type']): Column<R> => ({ name, type, value: (row) => row[name] ?? null });

test('builds typed columns, keeping nulls and null-only columns typed', () => {
  const columns = [column('s', 'utf8'), column('i', 'int64'), column('f', 'float64'), column('b', 'bool'), column('t', 'timestamp'), column('never', 'utf8')];
  const rows: R[] = [
    { s: 'héllo', i: 3, f: 1.5, b: true, t: '2025-01-02T03:04:05.678Z' },
    { s: null, i: null, f: null, b: false, t: null },
    { s: '', i: 9007199254740993n, f: -2, b: null, t: 0 },
  ];
  const table = toArrowTable(columns, rows);
  assert.equal(table.numRows, 3);
  assert.deepEqual(table.getChild('s')!.toArray(), ['héllo', null, '']);
  assert.deepEqual([...table.getChild('i')!].map((v) => (v === null ? null : BigInt(v as bigint))), [3n, null, 9007199254740993n]);
  assert.deepEqual([...table.getChild('f')!], [1.5, null, -2]);
  assert.deepEqual([...table.getChild('b')!], [true, false, null]);
  assert.deepEqual([...table.getChild('t')!].map((v) => (v === null ? null : Number(v))), [Date.parse('2025-01-02T03:04:05.678Z'), null, 0]);
  assert.equal(table.getChild('never')!.nullCount, 3);
  assert.equal(String(table.schema.fields.find((f) => f.name === 'never')!.type), 'Utf8');
});

test('builds lists of scalars and lists of structs', () => {
  const columns = [
    column('tags', { listOf: 'utf8' }),
    column('steps', { listOf: [{ name: 'index', type: 'int64' }, { name: 'tool', type: 'utf8' }, { name: 'ok', type: 'bool' }] }),
  ];
  const rows: R[] = [
    { tags: ['a', 'b'], steps: [{ index: 0, tool: 'run_tests', ok: true }, { index: 1, tool: 'edit', ok: false }] },
    { tags: [], steps: [] },
    { tags: null, steps: [{ index: 0, tool: null, ok: null }] },
  ];
  const table = toArrowTable(columns, rows);
  const tags = table.getChild('tags')!;
  assert.deepEqual([...tags.get(0)!], ['a', 'b']);
  assert.equal(tags.get(1)!.length, 0);
  assert.equal(tags.get(2), null);
  const steps = table.getChild('steps')!;
  assert.deepEqual(steps.get(0)!.toJSON().map((s: { toJSON(): object }) => s.toJSON()), [
    { index: 0n, tool: 'run_tests', ok: true },
    { index: 1n, tool: 'edit', ok: false },
  ]);
  assert.equal(steps.get(1)!.length, 0);
  assert.deepEqual(steps.get(2)!.get(0)!.toJSON(), { index: 0n, tool: null, ok: null });
});

test('rejects values that do not fit their column, naming column and row', () => {
  assert.throws(() => toArrowTable([column('n', 'int64')], [{ n: 1 }, { n: 1.5 }]), /column "n", row 1: 1.5 is not a whole number/);
  assert.throws(() => toArrowTable([column('t', 'timestamp')], [{ t: 'yesterday' }]), /column "t", row 0: "yesterday" is not a time/);
  assert.throws(() => toArrowTable([column('l', { listOf: 'utf8' })], [{ l: 'x' }]), /column "l", row 0: expected a list/);
});
