import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimateSimilarity, keptBits, LshIndex, lshParameters, MinHasher, tokenHashes } from './minhash.js';

/** Exact Jaccard similarity of two texts' token shingles, the quantity MinHash estimates. */
function jaccard(a: string, b: string, width: number): number {
  const shingles = (text: string): Set<string> => {
    const tokens = text.match(/[A-Za-z0-9_\u0080-\uffff]+|\S/g) ?? [];
    const set = new Set<string>();
    for (let i = 0; i + width <= tokens.length; i++) set.add(tokens.slice(i, i + width).join('\u0000'));
    return set;
  };
  const sa = shingles(a);
  const sb = shingles(b);
  let both = 0;
  for (const s of sa) if (sb.has(s)) both++;
  return both / (sa.size + sb.size - both);
}

function pseudoRandomWords(seed: number, count: number): string {
  let state = seed;
  const words: string[] = [];
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    words.push(`w${state % 5000}`);
  }
  return words.join(' ');
}

describe('tokenHashes', () => {
  it('splits words, numbers and single symbols, ignoring whitespace', () => {
    const tokens = (text: string): number[] => {
      const out = { buffer: new Int32Array(2) };
      const count = tokenHashes(text, out);
      return [...out.buffer.subarray(0, count)];
    };
    assert.equal(tokens('def f(x):\n    return x+1').length, 10);
    assert.deepEqual(tokens('a  b'), tokens('a\tb'));
    assert.notDeepEqual(tokens('ab'), tokens('a b'));
  });
});

describe('MinHasher', () => {
  const hasher = new MinHasher({ shingleTokens: 3, signatureSize: 256 });

  it('gives identical texts identical signatures', () => {
    const text = pseudoRandomWords(1, 300);
    assert.equal(estimateSimilarity(hasher.signature(text), hasher.signature(text)), 1);
  });

  it('estimates the Jaccard similarity of shingle sets within a few points', () => {
    const base = pseudoRandomWords(7, 400).split(' ');
    for (const changed of [10, 40, 120, 300]) {
      const other = [...base];
      for (let i = 0; i < changed; i++) other[(i * 97) % other.length] = `x${i}`;
      const a = base.join(' ');
      const b = other.join(' ');
      const truth = jaccard(a, b, 3);
      const estimate = estimateSimilarity(hasher.signature(a), hasher.signature(b));
      assert.ok(Math.abs(estimate - truth) < 0.1, `changed ${changed}: estimate ${estimate.toFixed(3)} vs Jaccard ${truth.toFixed(3)}`);
    }
  });

  it('copes with texts shorter than a shingle and with empty texts', () => {
    assert.equal(estimateSimilarity(hasher.signature('x'), hasher.signature('x')), 1);
    assert.ok(estimateSimilarity(hasher.signature('x'), hasher.signature('y')) < 0.2);
    assert.equal(hasher.signature('').length, 256);
  });

  it('rejects nonsensical options', () => {
    assert.throws(() => new MinHasher({ shingleTokens: 0 }), /shingleTokens/);
    assert.throws(() => new MinHasher({ signatureSize: 1 }), /signatureSize/);
  });
});

describe('lshParameters', () => {
  it('puts the candidate curve near the threshold', () => {
    for (const threshold of [0.5, 0.8, 0.9]) {
      const { bands, rows } = lshParameters(threshold, 128);
      assert.ok(bands * rows <= 128);
      const knee = (1 / bands) ** (1 / rows);
      assert.ok(Math.abs(knee - threshold) < 0.15, `threshold ${threshold}: knee ${knee.toFixed(2)} (b=${bands}, r=${rows})`);
    }
  });
});

describe('LshIndex', () => {
  it('finds near-duplicates, skips unrelated and removed items, and survives growth', () => {
    const hasher = new MinHasher({ signatureSize: 128 });
    const index = new LshIndex(128, 0.8, 16);
    const texts = Array.from({ length: 200 }, (_, i) => pseudoRandomWords(i + 100, 200));
    for (const text of texts) index.add(hasher.signature(text));
    assert.equal(index.count, 200);
    const words = texts[42]!.split(' ');
    words[100] = 'changed';
    const nearCopy = hasher.signature(words.join(' '));
    const hits = index.similar(nearCopy, 0.8);
    assert.deepEqual(hits.map((hit) => hit.id), [42]);
    assert.ok(hits[0]!.similarity > 0.85);
    assert.deepEqual(index.similar(hasher.signature(pseudoRandomWords(9999, 200)), 0.8), []);
    index.remove(42);
    assert.deepEqual(index.similar(nearCopy, 0.8), []);
  });

  it('keeps 8 bits of each value: estimates agree with whole signatures, and a signature read back finds the same items in another index', () => {
    const hasher = new MinHasher({ signatureSize: 128 });
    const train = new LshIndex(128, 0.5, 16);
    const held = new LshIndex(128, 0.5, 16);
    const base = pseudoRandomWords(7, 300).split(' ');
    const variants = [0, 10, 30, 60].map((changed) => base.map((word, i) => (i < changed ? `x${i}` : word)).join(' '));
    for (const text of variants) train.add(hasher.signature(text));
    held.add(hasher.signature(base.join(' ')));
    for (const [id, text] of variants.entries()) {
      const whole = estimateSimilarity(hasher.signature(base.join(' ')), hasher.signature(text));
      const kept = held.similar(train.signatureOf(id), 0)[0];
      assert.ok(kept && Math.abs(kept.similarity - whole) < 0.05, `variant ${id}: whole-signature estimate ${whole.toFixed(3)}, 8-bit ${kept?.similarity.toFixed(3)}`);
    }
    assert.equal(held.similar(train.signatureOf(0), 0.99)[0]!.similarity, 1, 'identical signatures estimate exactly 1');
    // At the default threshold (9 bands of 14): 128 signature bytes, 36 of band keys, 36 of chains, 72 of tables, 5 of flags; whole values alone took 512.
    const index = new LshIndex(128, 0.8, 1024);
    assert.equal(index.bytesPerItem, 277);
    // With the signatures kept outside it (the task job's signature file), the 128 bytes are not held.
    assert.equal(new LshIndex(128, 0.8, 1024, (_, out) => out).bytesPerItem, 149);
  });

  it('reads candidates from outside when told to, with the same results as holding the signatures', () => {
    const hasher = new MinHasher({ signatureSize: 128 });
    const outside: Uint8Array[] = [];
    const inner = new LshIndex(128, 0.8, 16);
    const outer = new LshIndex(128, 0.8, 16, (id, out) => {
      out.set(outside[id]!);
      return out;
    });
    const texts = Array.from({ length: 300 }, (_, i) => pseudoRandomWords(i % 150, 120));
    for (const text of texts) {
      const signature = hasher.signature(text);
      assert.deepEqual(outer.similar(signature, 0.8), inner.similar(signature, 0.8));
      inner.add(signature);
      outside.push(keptBits(signature));
      outer.add(signature);
    }
    for (let id = 0; id < texts.length; id += 37) assert.deepEqual(outer.signatureOf(id), inner.signatureOf(id));
  });
});
