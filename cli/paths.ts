import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openCheckpointStore, type CheckpointStore } from '../connectors/checkpoints/index.js';
import { stackPaths } from '../stack/index.js';

/** The checkout this CLI was built from (dist/cli/paths.js -> two levels up). */
export const repoRoot = (): string => resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const bundledTasks = (): string => join(repoRoot(), 'tasks', 'repair-bundle.jsonl');

/** Parquet files and rejects live under the state folder unless TRIALRUN_DATA_DIR says otherwise. */
export const dataDir = (env: NodeJS.ProcessEnv = process.env): string => resolve(env.TRIALRUN_DATA_DIR ?? join(stackPaths().stateDir, 'data'));

/** Policy artifacts: a folder under the state folder unless TRIALRUN_CHECKPOINTS names another store. */
export const checkpointStore = (env: NodeJS.ProcessEnv = process.env): CheckpointStore =>
  openCheckpointStore(env.TRIALRUN_CHECKPOINTS ?? join(stackPaths().stateDir, 'checkpoints'));
