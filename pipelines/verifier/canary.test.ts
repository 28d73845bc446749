import assert from 'node:assert/strict';
import { test } from 'node:test';
import { plantCanaries } from './canary.js';

test('plants a failing and a passing test under fresh names at the end of the first hidden test module', () => {
  const hidden = { 'test_b.py': 'def test_x():\n    assert 1\n', 'test_a.py': 'def test_y():\n    assert 1', 'data.json': '{}' };
  const first = plantCanaries(hidden);
  const second = plantCanaries(hidden);
  assert.ok(first.canaries && second.canaries);
  assert.match(first.canaries.mustFail, /^test_a\.py::test_[a-z]{6}_[a-z]{7}$/);
  assert.match(first.canaries.mustPass, /^test_a\.py::test_[a-z]{7}_[a-z]{6}$/);
  assert.notEqual(first.canaries.mustFail, second.canaries.mustFail, 'names change every run');
  assert.equal(first.files['test_b.py'], hidden['test_b.py']);
  assert.equal(first.files['data.json'], '{}');
  const planted = first.files['test_a.py']!;
  assert.ok(planted.startsWith('def test_y():\n    assert 1\n'), 'the original module is kept and terminated');
  const failName = first.canaries.mustFail.split('::')[1]!;
  assert.ok(planted.includes(`def ${failName}():\n    ${first.canaries.assertion}\n`));
  const [, left, right] = /assert (\d+) == (\d+)/.exec(first.canaries.assertion)!;
  assert.notEqual(left, right);
});

test('without a test module there is nothing to plant', () => {
  assert.deepEqual(plantCanaries({ 'cases.json': '[]' }), { files: { 'cases.json': '[]' }, canaries: null });
});
