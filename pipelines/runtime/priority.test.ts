import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { byPriority, decodeProgress, encodeHandled, freshestProgress, isHandled, nextToCommit } from './priority.js';

describe('out-of-order progress', () => {
  it('round-trips the records handled above the committed offset through the commit metadata', () => {
    const metadata = encodeHandled(100n, [100n, 103n, 117n, 99n]);
    const progress = decodeProgress('100', metadata);
    assert.equal(progress.next, 100n);
    assert.deepEqual([...progress.handled].sort(), [100n, 103n, 117n]);
    assert.ok(metadata.length < 64);
    assert.equal(encodeHandled(5n, [1n, 2n]), '');
  });

  it('treats a group without a commit, or metadata it did not write, as nothing handled', () => {
    assert.deepEqual(decodeProgress('-1', null), { next: null, handled: new Set() });
    assert.deepEqual(decodeProgress('7', 'someone else'), { next: 7n, handled: new Set() });
  });

  it('commits the lowest record of the batch not handled yet', () => {
    const offsets = [10n, 11n, 13n, 14n]; // 12 is a transaction marker
    assert.equal(nextToCommit(offsets, { next: null, handled: new Set([13n]) }), 10n);
    assert.equal(nextToCommit(offsets, { next: 10n, handled: new Set([10n, 11n]) }), 13n);
    assert.equal(nextToCommit(offsets, { next: 10n, handled: new Set([10n, 11n, 13n, 14n]) }), 15n);
    assert.equal(isHandled({ next: 12n, handled: new Set([14n]) }, 11n), true);
    assert.equal(isHandled({ next: 12n, handled: new Set([14n]) }, 13n), false);
  });

  it('trusts whichever reading of the progress is further along: the group commit read back, or its own last commit', () => {
    const own = { next: 12n, handled: new Set([14n]) };
    assert.equal(freshestProgress({ next: 10n, handled: new Set() }, own), own, 'a lagging read');
    assert.equal(freshestProgress({ next: null, handled: new Set() }, own), own, 'a read that shows no commit yet');
    const later = { next: 15n, handled: new Set<bigint>() };
    assert.equal(freshestProgress(later, own), later, 'another member committed after it');
    const more = { next: 12n, handled: new Set([13n, 14n]) };
    assert.equal(freshestProgress(more, own), more);
    assert.equal(freshestProgress({ next: 12n, handled: new Set() }, own), own);
    assert.equal(freshestProgress(later, undefined), later, 'nothing committed here');
  });

  it('orders by priority, highest first, offsets breaking ties', () => {
    assert.deepEqual(byPriority([0, 2, 1, 2, 0]), [1, 3, 2, 0, 4]);
  });

  it('fits a full reordering window in Kafka offset metadata (4 KiB)', () => {
    const handled = Array.from({ length: 1023 }, (_, i) => 1001n + BigInt(i));
    assert.ok(encodeHandled(1000n, handled).length < 4096);
  });
});
