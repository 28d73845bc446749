import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { checkRange, parsePosition } from './range.js';

test('parsePosition takes earliest, latest, offsets, @epoch ms and ISO times, and refuses anything else', () => {
  assert.equal(parsePosition('earliest'), 'earliest');
  assert.equal(parsePosition(' latest '), 'latest');
  assert.deepEqual(parsePosition('42'), { offset: 42n });
  assert.deepEqual(parsePosition('@1748736000000'), { timestamp: 1748736000000 });
  assert.deepEqual(parsePosition('2025-06-01T00:00:00Z'), { timestamp: Date.parse('2025-06-01T00:00:00Z') });
  assert.deepEqual(parsePosition('2025-06-01'), { timestamp: Date.parse('2025-06-01') });
  for (const negative of ['-5', '- 5', '@-5', '-2025-06-01']) assert.throws(() => parsePosition(negative), (error: unknown) => error instanceof ConfigError && /is negative/.test(error.message));
  // Date.parse alone would take these as some date.
  for (const bad of ['yesterday', '1.5', 'June 1', '12abc', '', '2025-13-45']) assert.throws(() => parsePosition(bad), /is not a position/);
  assert.throws(() => parsePosition('0001-01-01T00:00:00Z'), /is before 1970/);
});

test('checkRange refuses a start after the end and times in the future, and lets comparable-only-by-the-broker pairs through', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const t = (iso: string) => ({ timestamp: Date.parse(iso) });
  assert.doesNotThrow(() => checkRange('earliest', 'latest', now));
  assert.doesNotThrow(() => checkRange({ offset: 5n }, { offset: 5n }, now));
  assert.doesNotThrow(() => checkRange(t('2025-01-01T00:00:00Z'), t('2025-06-01T00:00:00Z'), now));
  assert.doesNotThrow(() => checkRange({ offset: 500n }, t('2025-01-01T00:00:00Z'), now), 'an offset and a time: only the broker can order them');
  assert.throws(() => checkRange({ offset: 5n }, { offset: 2n }, now), /--from offset 5 is after --to offset 2/);
  assert.throws(() => checkRange(t('2025-06-01T00:00:00Z'), t('2025-01-01T00:00:00Z'), now), /--from 2025-06-01T00:00:00.000Z is after --to 2025-01-01T00:00:00.000Z/);
  assert.throws(() => checkRange('latest', { offset: 3n }, now), /nothing comes after latest/);
  assert.throws(() => checkRange({ offset: 3n }, 'earliest', now), /nothing comes before earliest/);
  assert.throws(() => checkRange(t('2026-02-01T00:00:00Z'), 'latest', now), /--from 2026-02-01T00:00:00.000Z is in the future/);
  assert.throws(() => checkRange('earliest', t('2026-02-01T00:00:00Z'), now), (error: unknown) => error instanceof ConfigError && /--to .* is in the future .*; use latest/.test(error.message));
});
