import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PartitionBuffer } from './buffer.js';


test('tracks the offset range, rows per folder, dead letters and size; rolls by size or age', () => {
  const buffer = new PartitionBuffer('t', 0);
  assert.equal(buffer.empty, true);
  assert.equal(buffer.due(1_000_000, 1, 1), false, 'an empty buffer is never due');
  buffer.addRow('run_id=a/hour=x', 'a', [Buffer.from('{"_offset":5}')]);
  buffer.consumed(5n, 100, [], 1000);
  buffer.consumed(6n, 50, [{ topic: 'dl', key: 't', value: Buffer.from('x') }], 1500);
  buffer.addRow('run_id=b/hour=x', 'b', [Buffer.from('{"_offset":7}')]);
  buffer.consumed(7n, 100, [], 2000);
  assert.equal(buffer.first, 5n);
  assert.equal(buffer.last, 7n);
  assert.equal(buffer.rows, 2);
  assert.equal(buffer.bytes, 250);
  assert.deepEqual([...buffer.buckets], [
    ['run_id=a/hour=x', { runId: 'a', pieces: [Buffer.from('{"_offset":5}')], rows: 1 }],
    ['run_id=b/hour=x', { runId: 'b', pieces: [Buffer.from('{"_offset":7}')], rows: 1 }],
  ]);
  assert.equal(buffer.deadLetters.length, 1);
  assert.equal(buffer.due(2000, 1000, 5000), false);
  assert.equal(buffer.due(2000, 250, 5000), true, 'size');
  assert.equal(buffer.due(6000, 1000, 5000), true, 'age counts from the oldest record');
  assert.throws(() => buffer.consumed(7n, 1, [], 2000), /offset 7 arrived after 7/);
  const batch = buffer.detach();
  assert.deepEqual([batch.first, batch.last, batch.rows, batch.deadLetters.length, [...batch.buckets.keys()]], [5n, 7n, 2, 1, ['run_id=a/hour=x', 'run_id=b/hour=x']]);
  assert.equal(buffer.empty, true, 'detached: empty again');
  assert.equal(buffer.bytes, 0);
  assert.throws(() => buffer.consumed(7n, 1, [], 2000), /offset 7 arrived after 7/, 'a record delivered again while its batch lands is still refused');
  buffer.consumed(8n, 10, [], 3000);
  assert.equal(buffer.first, 8n);
  assert.throws(() => new PartitionBuffer('t', 1).detach(), /nothing buffered/);
  buffer.clear();
  assert.equal(buffer.empty, true);
  assert.equal(buffer.rows, 0);
  assert.equal(buffer.deadLetters.length, 0);
});
