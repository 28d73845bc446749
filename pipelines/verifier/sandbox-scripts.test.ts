import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { VERDICT_SCRIPTS, verifierScript, verifierScriptPath } from './sandbox-scripts.js';
import { verifierCodeDigest } from './version.js';

test('the in-sandbox Python is read from the checkout, whether this runs from dist/ or from source', () => {
  for (const name of VERDICT_SCRIPTS) {
    assert.match(verifierScriptPath(name), new RegExp(`/pipelines/verifier/python/${name.replace('.', '\\.')}$`));
    assert.ok(verifierScript(name).length > 100, name);
  }
  assert.match(verifierCodeDigest(), /^[0-9a-f]{64}$/);
});

test('a script that is not there is a ConfigError naming it', () => {
  assert.throws(() => verifierScript('no-such-script.py'), (error: unknown) => error instanceof ConfigError && /pipelines\/verifier\/python\/no-such-script\.py is missing from the checkout/.test(error.message));
});
