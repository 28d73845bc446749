import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { FEATURE_NAMES } from '../../../policies/index.js';
import { EDIT_KINDS } from '../../../envs/index.js';
import { checkoutRoot } from '../../../schemas/index.js';
import { MUTATION_KINDS } from './spec.js';

test('the edit kinds have one source: the edit tool, the task job and the policy features all read edit_kinds.json', () => {
  const tools = join(checkoutRoot(), 'sandbox-images', 'python-repair', 'tools');
  const fromTool = JSON.parse(execFileSync('python3', ['-c', 'import json, sys; sys.path.insert(0, sys.argv[1]); import trialrun_repair; print(json.dumps(list(trialrun_repair.KINDS)))', tools], { encoding: 'utf8' })) as string[];
  assert.deepEqual(fromTool, [...EDIT_KINDS].sort());
  assert.deepEqual(MUTATION_KINDS, EDIT_KINDS, 'derivation takes the kinds in the file\'s order');
  assert.deepEqual(FEATURE_NAMES.filter((name) => name.startsWith('kind:')), [...EDIT_KINDS].sort().map((kind) => `kind:${kind}`));
  // The features every checkpoint so far was trained with.
  assert.deepEqual(FEATURE_NAMES.slice(0, 9), ['arith-op', 'bool-op', 'compare-op', 'negation', 'off-by-one', 'range-bound', 'return-value', 'slice-bound', 'swap-args'].map((kind) => `kind:${kind}`));
});
