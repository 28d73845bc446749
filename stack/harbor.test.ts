import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { findHarborPython } from './harbor.js';

test('harbor\'s Python: TRIALRUN_HARBOR_PYTHON must be a Python >= 3.12, and a machine without one is told how to get one', async () => {
  await assert.rejects(findHarborPython({ TRIALRUN_HARBOR_PYTHON: '/bin/true' }), /TRIALRUN_HARBOR_PYTHON=\/bin\/true is not Python >= 3\.12 \(harbor 0\.25\.0 needs it\)/);
  const nowhere = mkdtempSync(join(tmpdir(), 'trialrun-no-pyenv-'));
  await assert.rejects(findHarborPython({ PATH: nowhere, PYENV_ROOT: nowhere }), new RegExp(`harbor 0\\.25\\.0 needs Python >= 3\\.12, and none was found on PATH or under ${nowhere}/versions; install one \\(pyenv install 3\\.12\\) or set TRIALRUN_HARBOR_PYTHON`));
});
