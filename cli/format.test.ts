import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResult } from './format.js';
import { progressLine } from './progress.js';

const result = { columns: ['a', 'b'], rows: [[1, 'x,y'], [null, 'z']] };

test('csv quotes what needs quoting', () => {
  assert.equal(formatResult(result, 'csv'), 'a,b\n1,"x,y"\n,z');
});

test('json is one object per line', () => {
  assert.equal(formatResult(result, 'json'), '{"a":1,"b":"x,y"}\n{"a":null,"b":"z"}');
});

test('table aligns columns and counts rows', () => {
  assert.match(formatResult(result, 'table'), /\(2 rows\)$/);
});

test('progress shows done/total, rate and ETA', () => {
  assert.equal(progressLine('x', 5, 10, 5000), 'x 5/10 (50%) · 1.00/s · ETA 5s');
});
