import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseBounded, parseJsonBounded, textBoundsProblem, valueBoundsProblem, type ParseBounds } from './bounds.js';

const small: ParseBounds = { maxBytes: 100, maxDepth: 3, maxNodes: 10 };

test('text is refused above maxBytes, counted in UTF-8', () => {
  assert.equal(textBoundsProblem('x'.repeat(100), small), null);
  assert.match(textBoundsProblem('x'.repeat(101), small)!, /101 bytes, above the 100 bytes read/);
  assert.match(textBoundsProblem('é'.repeat(51), small)!, /102 bytes/);
});

test('a value deeper than maxDepth or with more than maxNodes values (shared ones counted at each use) is refused, walked without recursion', () => {
  assert.equal(valueBoundsProblem({ a: [[1]] }, small), null);
  assert.match(valueBoundsProblem({ a: [[[1]]] }, small)!, /nests deeper than 3 levels/);
  assert.match(valueBoundsProblem(Array.from({ length: 10 }, () => 1), small)!, /more than 10 values/);
  const shared = [1, 2, 3];
  assert.match(valueBoundsProblem([shared, shared, shared], small)!, /more than 10 values/);
  let deep: unknown = 0;
  for (let i = 0; i < 1_000_000; i++) deep = [deep];
  assert.match(valueBoundsProblem(deep, { maxBytes: 1, maxDepth: 128, maxNodes: 10_000_000 })!, /deeper than 128/);
});

test('parseJsonBounded gives the value or why not; a parser that throws (a stack overflow too) is a problem, not an exception', () => {
  assert.deepEqual(parseJsonBounded('{"a": [1]}', small), { value: { a: [1] } });
  assert.ok('problem' in parseJsonBounded('{"a": ', small));
  assert.deepEqual(parseJsonBounded('[[[[1]]]]', small), { problem: 'it nests deeper than 3 levels' });
  const overflow = (): unknown => overflow();
  assert.deepEqual(parseBounded('x', small, overflow), { problem: 'it nests too deeply to parse' });
});
