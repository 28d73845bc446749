import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { resolveRewardSpec, scoreOf } from './score.js';

const outcome = { passed: false, fraction: 0.5, hacked: false, toolCalls: 0 };

test('binary scores 1 for a pass and 0 otherwise; fraction is the partial credit', () => {
  const binary = resolveRewardSpec(undefined);
  assert.deepEqual(binary, { shape: 'binary', turnPenalty: 0 });
  assert.equal(scoreOf(binary, { ...outcome, passed: true }), 1);
  assert.equal(scoreOf(binary, outcome), 0);
  assert.equal(scoreOf(resolveRewardSpec({ shape: 'fraction' }), outcome), 0.5);
});

test('a turn penalty is taken per tool call and floored at 0; a hack scores 0', () => {
  const spec = resolveRewardSpec({ shape: 'fraction', turnPenalty: 0.1 });
  assert.ok(Math.abs(scoreOf(spec, { ...outcome, fraction: 1, toolCalls: 3 }) - 0.7) < 1e-9);
  assert.equal(scoreOf(spec, { ...outcome, toolCalls: 40 }), 0);
  assert.equal(scoreOf(spec, { ...outcome, fraction: 1, passed: true, hacked: true }), 0);
  assert.throws(() => resolveRewardSpec({ turnPenalty: -1 }), ConfigError);
});
