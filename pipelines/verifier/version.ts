import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERDICT_SCRIPTS, verifierScript } from './sandbox-scripts.js';

/** The modules whose code decides a verdict, besides every verification kind's (kinds/); calibration and re-scoring only drive them. */
const VERDICT_MODULES = ['verifier', 'admission', 'options', 'sandboxes', 'judge', 'output-checks', 'score', 'screening', 'canary', 'junit', 'sandbox-scripts', 'version'] as const;

let codeDigest: string | undefined;

/** Every module under kinds/ (each kind's folder and what they share), tests left out, in a fixed order. */
function kindModules(dir: string, extension: string): string[] {
  const names = readdirSync(join(dir, 'kinds'), { recursive: true, encoding: 'utf8' });
  return names
    .filter((name) => name.endsWith(extension) && !name.endsWith(`.test${extension}`) && !name.endsWith('.d.ts'))
    .map((name) => join('kinds', name.slice(0, -extension.length)).split('\\').join('/'))
    .sort();
}

/**
 * sha256 over the source of the verdict modules as this process runs them (compiled JavaScript from
 * dist/, or TypeScript under tsx) and of the Python they send into the sandbox: any change to how
 * verdicts are reached changes the version. The executor whose process-tree kill the runner uses is part of
 * the sandbox image, whose digest the version holds too.
 */
export function verifierCodeDigest(): string {
  if (codeDigest === undefined) {
    const here = fileURLToPath(import.meta.url);
    const hash = createHash('sha256');
    for (const name of [...VERDICT_MODULES, ...kindModules(dirname(here), extname(here))]) {
      const path = join(dirname(here), `${name}${extname(here)}`);
      if (!existsSync(path)) throw new Error(`verifier module ${path} is missing; the verifier version cannot be computed`);
      hash.update(`${name}\0`).update(readFileSync(path)).update('\0');
    }
    for (const script of VERDICT_SCRIPTS) hash.update(`${script}\0`).update(verifierScript(script)).update('\0');
    codeDigest = hash.digest('hex');
  }
  return codeDigest;
}

/** `v-<12 hex>`: the verifier's code, its verdict-relevant configuration and the sandbox image, hashed together. */
export function verifierVersion(config: Readonly<Record<string, unknown>>, imageDigest: string): string {
  const digest = createHash('sha256').update(JSON.stringify({ code: verifierCodeDigest(), config, imageDigest })).digest('hex');
  return `v-${digest.slice(0, 12)}`;
}
