import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../schemas/index.js';

/**
 * The Python that runs inside a verification sandbox lives in `pipelines/verifier/python/`, read from the
 * checkout whether this module runs compiled (dist/pipelines/verifier) or from source: the first folder
 * above with a package.json holds it. Every file travels on stdin with the job; nothing is installed in
 * the image.
 */
const PYTHON_DIR = join('pipelines', 'verifier', 'python');

/** The scripts whose code decides verdicts; their text is part of the verifier version. */
export const VERDICT_SCRIPTS = ['bootstrap.py', 'runner.py', 'witness.py', 'strict.py'] as const;

const cache = new Map<string, string>();

/** The path of one of the verifier's Python files. */
export function verifierScriptPath(name: string): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, PYTHON_DIR, name);
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new ConfigError(`verifier script ${PYTHON_DIR}/${name} not found above ${fileURLToPath(import.meta.url)}`);
  }
}

/** The text of one of the verifier's Python files, read once. */
export function verifierScript(name: string): string {
  let source = cache.get(name);
  if (source === undefined) {
    source = readFileSync(verifierScriptPath(name), 'utf8');
    cache.set(name, source);
  }
  return source;
}
