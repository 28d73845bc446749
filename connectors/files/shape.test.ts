import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { measureRow } from './shape.js';

describe('measureRow', () => {
  it('measures depth and text of a row without recursing, however deep', () => {
    assert.deepEqual(measureRow({ id: 'a', tags: ['x', 'y'] }, { textBytes: true }), { depth: 2, textBytes: 3 });
    assert.deepEqual(measureRow('é', { textBytes: true }), { depth: 0, textBytes: 2 });
    assert.equal(measureRow({ id: 'a' }).textBytes, 0, 'text is counted only when asked for');
    const levels = 1_000_000;
    const deep = JSON.parse(`${'['.repeat(levels)}"x"${']'.repeat(levels)}`) as unknown;
    assert.deepEqual(measureRow({ deep }, { textBytes: true }), { depth: levels + 1, textBytes: 1 });
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, [i]]));
    assert.equal(measureRow(wide).depth, 2);
    assert.equal(measureRow({ blob: new Uint8Array(16) }).depth, 2);
  });
});
