import assert from 'node:assert/strict';
import fs, { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import { FileSignatures, MemorySignatures } from './columns.js';
import { JsonLinesWriter, SpillFile } from './spill.js';

const folder = (): string => mkdtempSync(join(tmpdir(), 'spill-test-'));

describe('SpillFile', () => {
  it('reads back every value, in file order and out of it, across read windows and unwritten buffers', () => {
    const dir = folder();
    try {
      const spill = new SpillFile<{ n: number; text: string }>(join(dir, 'rows.jsonl'));
      // Values of up to 3 MB: larger than a read window, and past the write buffer.
      const values = Array.from({ length: 300 }, (_, n) => ({ n, text: `é${'x'.repeat(n % 7 === 0 ? 3_000_000 : n * 101)}\u{1f600}` }));
      for (const value of values.slice(0, 150)) spill.add(value);
      assert.deepEqual(spill.read(149), values[149]);
      for (const value of values.slice(150)) assert.equal(spill.add(value), value.n);
      for (const value of values) assert.deepEqual(spill.read(value.n), value);
      for (const n of [299, 0, 150, 7, 298, 1]) assert.deepEqual(spill.read(n), values[n]);
      assert.throws(() => spill.read(300), RangeError);
      spill.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('reads a value behind its window alone, leaving the window for the next value forward', () => {
    const dir = folder();
    const reads = mock.method(fs, 'readSync');
    syncBuiltinESMExports();
    try {
      const spill = new SpillFile<{ n: number; text: string }>(join(dir, 'rows.jsonl'));
      // 4,000 values of about 1 KB: a read window holds about 1,000.
      for (let n = 0; n < 4000; n++) spill.add({ n, text: 'x'.repeat(1000) });
      spill.read(0);
      reads.mock.resetCalls();
      // Dedup's report: each duplicate forward, then the row it duplicates, far behind.
      for (let n = 3000; n < 4000; n++) {
        assert.equal(spill.read(n).n, n);
        assert.equal(spill.read(n - 2500).n, n - 2500);
      }
      // One system call per value behind, and a few window refills forward (not one per value).
      const calls = reads.mock.callCount();
      assert.ok(calls >= 1000 && calls <= 1000 + 3, `${calls} reads`);
      spill.close();
    } finally {
      reads.mock.restore();
      syncBuiltinESMExports();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('JsonLinesWriter', () => {
  it('writes one JSON line per value, lines longer than its buffer and multi-byte text included', () => {
    const dir = folder();
    try {
      const writer = new JsonLinesWriter(join(dir, 'out', 'tasks.jsonl'), 64);
      const values = Array.from({ length: 100 }, (_, n) => ({ n, text: n % 10 === 0 ? `é\u{1f600}${'x'.repeat(n)}` : '' }));
      for (const value of values) writer.add(value);
      writer.close();
      const lines = readFileSync(join(dir, 'out', 'tasks.jsonl'), 'utf8').trimEnd().split('\n');
      assert.deepEqual(lines.map((line) => JSON.parse(line) as unknown), values);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('signature stores', () => {
  it('give back what was appended, from memory and from a file, across blocks', () => {
    const dir = folder();
    try {
      const size = 16;
      const stores = [new MemorySignatures(size), new FileSignatures(join(dir, 'signatures.bin'), size)];
      const signatureOf = (row: number): Uint8Array => Uint8Array.from({ length: size }, (_, i) => (row * 31 + i * 7) & 0xff);
      const rows = 20_000; // more than two blocks of the file store
      for (const store of stores) for (let row = 0; row < rows; row++) store.append(row, signatureOf(row));
      const out = new Uint8Array(size);
      for (const store of stores) {
        for (const row of [0, 1, 8191, 8192, 19_999, 5, 12_345]) assert.deepEqual(store.read(row, out), signatureOf(row));
        store.close();
      }
      const other = new FileSignatures(join(dir, 'other.bin'), size);
      assert.throws(() => other.append(1, signatureOf(1)), /out of order/);
      other.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
