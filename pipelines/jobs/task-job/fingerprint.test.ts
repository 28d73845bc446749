import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RowFingerprinter, type ComparableRow } from './fingerprint.js';

const fingerprinter = new RowFingerprinter();
const exact = (row: ComparableRow): string => fingerprinter.fingerprint(row).exact;
const tokens = (row: ComparableRow): number[] => [...fingerprinter.tokens.buffer.subarray(0, fingerprinter.fingerprint(row).tokenCount)];

describe('RowFingerprinter', () => {
  it('keys prose by its words and code by its Python tokens', () => {
    const row = { prose: ['Sum  the\r\nlist.'], code: ['def total(xs):\n    return sum(xs)\n'] };
    assert.equal(exact({ prose: ['Sum the list. '], code: ['def total( xs ):   \r\n\n    return sum(xs)'] }), exact(row));
    assert.notEqual(exact({ prose: ['Sum the list.'], code: ['def total(xs):\n    return sum(xs)  # fast\n'] }), exact(row), 'a comment is content');
    assert.notEqual(exact({ prose: ['Sum the list.'], code: ['def total(ys):\n    return sum(ys)\n'] }), exact(row), 'names are content');
    assert.notEqual(exact({ prose: ['Sum the list.', ''], code: ['def total(xs):\n    return sum(xs)\n'] }), exact(row), 'parts are kept apart');
    // Python reads identifiers in NFKC: a ligature and its letters are one name.
    assert.equal(exact({ prose: [], code: ['\ufb01le = 1\n'] }), exact({ prose: [], code: ['file = 1\n'] }));
  });

  it('renames identifiers by first appearance across module and tests, keeping builtins, keywords and attribute methods', () => {
    const original = { prose: ['Doc'], code: ['def total(xs):\n    out = []\n    for x in xs:\n        out.append(len(x))\n    return out  # the lengths\n', 'from m import total\nassert total(["a"]) == [1]\n'] };
    const renamed = { prose: ['Doc'], code: ['def lengths(values):\n    result = []\n    for v in values:\n        result.append(len(v))\n    return result\n', 'from m import lengths\nassert lengths(["a"]) == [1]\n'] };
    assert.deepEqual(tokens(renamed), tokens(original));
    assert.notEqual(exact(renamed), exact(original));
    const otherBuiltin = { ...renamed, code: [renamed.code[0]!.replace('len(v)', 'abs(v)'), renamed.code[1]!] };
    assert.notDeepEqual(tokens(otherBuiltin), tokens(original));
    const otherMethod = { ...renamed, code: [renamed.code[0]!.replace('.append', '.extend'), renamed.code[1]!] };
    assert.notDeepEqual(tokens(otherMethod), tokens(original));
    const swapped = { ...renamed, code: ['def lengths(values):\n    result = []\n    for v in result:\n        values.append(len(v))\n    return result\n', renamed.code[1]!] };
    assert.notDeepEqual(tokens(swapped), tokens(original), 'renaming is consistent, not blind');
  });
});
