import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdTable } from './id-table.js';

test('ids by row, and the first row of each id, through many rehashes', () => {
  const table = new IdTable();
  const ids: string[] = [];
  for (let i = 0; i < 20_000; i++) ids.push(i % 7 === 0 && i > 0 ? ids[i - 7]! : `task-${i}-ünï`);
  ids.forEach((id) => table.add(id));
  assert.equal(table.length, ids.length);
  assert.equal(table.distinct, new Set(ids).size);
  for (const i of [0, 1, 7, 14, 9_999, 19_999]) assert.equal(table.at(i), ids[i]);
  assert.equal(table.first(ids[14]!), ids.indexOf(ids[14]!), 'a repeated id finds its first row');
  assert.equal(table.first(ids[19_998]!), 19_998);
  assert.equal(table.first('never-added'), undefined);
  assert.equal(table.first(''), undefined);
  table.add('');
  assert.equal(table.first(''), 20_000, 'an empty id is an id');
  assert.equal(table.at(20_000), '');
  assert.throws(() => table.at(20_001), /no row 20001 among 20001/);
});
