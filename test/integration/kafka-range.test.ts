import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { readRange } from '../../connectors/kafka/index.js';
import { ensureStack, freshContext, sendRaw } from './harness.js';

before(ensureStack, { timeout: 900_000 });

test('reads a bounded range by offset and by timestamp, and resumes idempotently under the same group', { timeout: 120_000 }, async () => {
  const context = await freshContext('range');
  const topic = context.names.name('deadLetters'); // one partition, plain bytes are fine here
  const early = Array.from({ length: 5 }, (_, i) => ({ key: 'k', value: Buffer.from(`early-${i}`) }));
  await sendRaw(context, 'deadLetters', early);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const boundary = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await sendRaw(context, 'deadLetters', Array.from({ length: 3 }, (_, i) => ({ key: 'k', value: Buffer.from(`late-${i}`) })));

  const read = async (from: Parameters<typeof readRange>[1]['from'], to: Parameters<typeof readRange>[1]['to'], groupId?: string) => {
    const values: string[] = [];
    const report = await readRange(context.kafka, { topic, from, to, groupId, onRecord: ({ value }) => void values.push(value!.toString()) });
    return { values, report };
  };

  assert.deepEqual((await read({ offset: 2n }, { offset: 4n })).values, ['early-2', 'early-3']);
  assert.deepEqual((await read({ timestamp: boundary }, 'latest')).values, ['late-0', 'late-1', 'late-2']);
  assert.deepEqual((await read('earliest', { timestamp: boundary })).values, early.map((m) => m.value.toString()));

  const group = `it-range-${Date.now()}`;
  const first = await read('earliest', 'latest', group);
  assert.equal(first.values.length, 8);
  const again = await read('earliest', 'latest', group);
  assert.deepEqual(again.values, [], 'the same range under the same group hands nothing over twice');
});
