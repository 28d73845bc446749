import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { checkoutRoot } from '../schemas/index.js';

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

/** Creates (if needed) and returns a sub-folder of the state or cache folder. */
export function ensureDir(...parts: string[]): string {
  const dir = join(...parts);
  mkdirSync(dir, { recursive: true });
  return dir;
}
