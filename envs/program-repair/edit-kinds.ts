import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { checkoutFile, ConfigError, describeIssues } from '../../schemas/index.js';

/**
 * The one list of candidate-edit kinds, read by everything that names them: the in-sandbox edit tool
 * (`trialrun_repair.py`, beside which the file ships in the image), the task job's derivation, the policies'
 * features and `tasks/check_bundle.py`.
 */
export const EDIT_KINDS_FILE = 'sandbox-images/python-repair/tools/edit_kinds.json';

const EditKindsFile = z.object({ kinds: z.array(z.string().regex(/^[a-z][a-z-]*$/)).min(1).refine((kinds) => new Set(kinds).size === kinds.length, 'kinds must be unique') });

function loadEditKinds(): readonly [string, ...string[]] {
  const path = checkoutFile(EDIT_KINDS_FILE);
  const parsed = EditKindsFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new ConfigError(`${path} is invalid:\n  ${describeIssues(parsed.error).join('\n  ')}`);
  return Object.freeze(parsed.data.kinds) as unknown as readonly [string, ...string[]];
}

/** In the file's order, which is derivation's round-robin order over kinds. */
export const EDIT_KINDS = loadEditKinds();
