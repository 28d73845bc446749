import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkoutFile } from '../../schemas/index.js';

/**
 * The Python that runs inside a verification sandbox lives in `pipelines/verifier/python/`, read from the
 * checkout. Every file travels on stdin with the job; nothing is installed in the image.
 */
const PYTHON_DIR = join('pipelines', 'verifier', 'python');

/** The scripts whose code decides verdicts; their text is part of the verifier version. */
export const VERDICT_SCRIPTS = ['bootstrap.py', 'runner.py', 'witness.py', 'strict.py'] as const;

const cache = new Map<string, string>();

/** The path of one of the verifier's Python files. */
export const verifierScriptPath = (name: string): string => checkoutFile(join(PYTHON_DIR, name));

/** The text of one of the verifier's Python files, read once. */
export function verifierScript(name: string): string {
  let source = cache.get(name);
  if (source === undefined) {
    source = readFileSync(verifierScriptPath(name), 'utf8');
    cache.set(name, source);
  }
  return source;
}
