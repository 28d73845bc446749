import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Per-checkout state (data, logs, pid files) lives under one folder; downloads that are the same for
 * every checkout (jars, virtualenvs, root filesystems) live in a per-user cache so a fresh clone reuses them.
 */
export interface StackPaths {
  /** @default `<checkout>/.trialrun` (env TRIALRUN_STATE_DIR), whatever the current folder */
  readonly stateDir: string;
  /** @default `~/.cache/trialrun` (env TRIALRUN_CACHE_DIR) */
  readonly cacheDir: string;
}

export function stackPaths(env: NodeJS.ProcessEnv = process.env): StackPaths {
  const stateDir = resolve(env.TRIALRUN_STATE_DIR ?? join(checkoutRoot(), '.trialrun'));
  const cacheDir = resolve(env.TRIALRUN_CACHE_DIR ?? join(homedir(), '.cache', 'trialrun'));
  return { stateDir, cacheDir };
}

/**
 * Where `stack up` keeps what setting up one component printed (downloads, apt, debootstrap, image builds)
 * and the steps it took, so that the terminal shows one line per component and a failure names this file.
 */
export const setupLogFile = (stateDir: string, component: string): string => join(stateDir, 'logs', `setup-${component}.log`);

/** The checkout this module belongs to, whether it runs from dist/ or from source: the nearest folder above with a package.json. */
export function checkoutRoot(): string {
  const here = fileURLToPath(import.meta.url);
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${here}: not run from a trialrun checkout`);
  }
}

/** A file or folder shipped in the checkout, e.g. `stack/kafka/pom.xml`. */
export const checkoutFile = (relative: string): string => join(checkoutRoot(), relative);

/** Creates (if needed) and returns a sub-folder of the state or cache folder. */
export function ensureDir(...parts: string[]): string {
  const dir = join(...parts);
  mkdirSync(dir, { recursive: true });
  return dir;
}
