import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CappedBuffer } from './output.js';

test('keeps everything under the cap', () => {
  const buffer = new CappedBuffer(100);
  buffer.push(Buffer.from('hello '));
  buffer.push(Buffer.from('world'));
  assert.equal(buffer.toString(), 'hello world');
  assert.equal(buffer.truncated, false);
});

test('keeps head and tail of a flood within the cap', () => {
  const buffer = new CappedBuffer(20);
  buffer.push(Buffer.from('0123456789'));
  for (let i = 0; i < 10_000; i++) buffer.push(Buffer.from('y\n'));
  buffer.push(Buffer.from('THE-END'));
  const text = buffer.toString();
  assert.ok(buffer.truncated);
  assert.ok(text.startsWith('0123456789'));
  assert.ok(text.endsWith('THE-END'));
  assert.match(text, /bytes truncated/);
});
