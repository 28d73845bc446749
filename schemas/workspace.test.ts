import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapePathBytes, pathFromBytes, unescapePath } from './workspace.js';

test('escaped paths round-trip any bytes', () => {
  const names = [Buffer.from([0x66, 0xff, 0xfe, 0x2e, 0x70, 0x79]), Buffer.from('a%b c\n-d'), Buffer.from([0x80]), Buffer.from('')];
  for (const name of names) assert.deepEqual(Buffer.from(unescapePath(escapePathBytes(name))), name);
  assert.equal(escapePathBytes(Buffer.from([0x66, 0xff])), 'f%FF');
});

test('valid UTF-8 names stay as they are; others are escaped and flagged', () => {
  assert.deepEqual(pathFromBytes(Buffer.from('dir/naïve\nname.py')), { path: 'dir/naïve\nname.py', escaped: false });
  assert.deepEqual(pathFromBytes(Buffer.from([0x61, 0xc3])), { path: 'a%C3', escaped: true });
});

test('text that escaping cannot have produced is refused with the reason', () => {
  assert.throws(() => unescapePath('a%zz'), /"%" at 1 is not followed by two upper-case hex digits/);
  assert.throws(() => unescapePath('a b'), /character " " at 1 must be escaped/);
});
