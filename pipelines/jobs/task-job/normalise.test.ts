import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normaliseCode, normaliseProse } from './normalise.js';

describe('normalisation', () => {
  it('gives code LF line endings and exactly one final newline, touching nothing else', () => {
    assert.equal(normaliseCode('a = 1\r\nb = "x  "\r\n'), 'a = 1\nb = "x  "\n');
    assert.equal(normaliseCode('a = 1'), 'a = 1\n');
    assert.equal(normaliseCode('a = 1\n\n\n'), 'a = 1\n');
    assert.equal(normaliseCode('a = 1\n'), 'a = 1\n');
  });

  it('composes prose to NFC and trims trailing spaces and blank edges', () => {
    assert.equal(normaliseProse('  Cafe\u0301  \r\nsecond line \t\n\n'), 'Caf\u00e9\nsecond line');
    assert.equal(normaliseProse('plain'), 'plain');
    // A long run of spaces before text and a trailing space: linear, not a regex's quadratic backtracking.
    const spaces = ' '.repeat(2_000_000);
    assert.equal(normaliseProse(`${spaces}x \nline${spaces}\n`), 'x\nline');
  });
});
