import assert from 'node:assert/strict';
import { test } from 'node:test';
import { finiteNumber, oneOf, requireOption, wholeNumber } from './check.js';
import { ConfigError, isRetriable } from './errors.js';

const refused = (work: () => unknown, message: string): void =>
  assert.throws(work, (error: unknown) => error instanceof ConfigError && !isRetriable(error) && error.message === message);

test('wholeNumber passes whole numbers in range through, and names the option, the rule and the value otherwise', () => {
  assert.equal(wholeNumber('X.count', 3, { min: 1 }), 3);
  assert.equal(wholeNumber('X.count', 0), 0);
  refused(() => wholeNumber('X.count', 0, { min: 1 }), 'X.count must be a whole number >= 1, got 0');
  refused(() => wholeNumber('X.count', 1.5, { min: 1 }), 'X.count must be a whole number >= 1, got 1.5');
  refused(() => wholeNumber('X.count', Number.NaN), 'X.count must be a whole number, got NaN');
  refused(() => wholeNumber('X.count', '3', { min: 1 }), 'X.count must be a whole number >= 1, got "3"');
  refused(() => wholeNumber('X.nodes', 10, { min: 1, max: 9 }), 'X.nodes must be a whole number from 1 to 9, got 10');
  refused(() => wholeNumber('X.timeoutMs', 10, { min: 1000, unit: 'ms' }), 'X.timeoutMs must be a whole number of ms >= 1000, got 10');
  refused(() => wholeNumber('X.big', 2 ** 53, { min: 0 }), `X.big must be a whole number >= 0, got ${2 ** 53}`);
});

test('finiteNumber takes open and closed bounds', () => {
  assert.equal(finiteNumber('X.clip', 0.2, { above: 0, below: 1 }), 0.2);
  refused(() => finiteNumber('X.clip', 1, { above: 0, below: 1 }), 'X.clip must be a number in (0, 1), got 1');
  refused(() => finiteNumber('X.beta', -0.1, { min: 0, below: 1 }), 'X.beta must be a number in [0, 1), got -0.1');
  refused(() => finiteNumber('X.rate', 0, { above: 0 }), 'X.rate must be a number > 0, got 0');
  refused(() => finiteNumber('X.rate', Number.POSITIVE_INFINITY, { above: 0 }), 'X.rate must be a number > 0, got Infinity');
  refused(() => finiteNumber('X.cap', 2, { max: 1 }), 'X.cap must be a number <= 1, got 2');
});

test('oneOf and requireOption', () => {
  assert.equal(oneOf('X.kind', 'b', ['a', 'b']), 'b');
  refused(() => oneOf('X.kind', 'c', ['a', 'b']), 'X.kind must be one of a, b, got "c"');
  requireOption(true, 'X.seed', 'a non-empty string', 's');
  refused(() => requireOption(false, 'X.seed', 'a non-empty string', ''), 'X.seed must be a non-empty string, got ""');
  refused(() => requireOption(false, 'X.kinds', 'a list of at least one kind', []), 'X.kinds must be a list of at least one kind, got []');
  refused(() => requireOption(false, 'X.limits', 'an object', null), 'X.limits must be an object, got null');
});
