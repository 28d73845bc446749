import { join, resolve } from 'node:path';
import { openTreeStore, type TreeStore } from '../connectors/artifacts/index.js';
import { openCheckpointStore, type CheckpointStore } from '../connectors/checkpoints/index.js';
import { locationChild, openBlobStore, outputFile, type OutputFile } from '../connectors/storage/index.js';
import { checkoutRoot, isS3Url, parseS3Url } from '../schemas/index.js';
import { stackPaths } from '../stack/index.js';
import type { OptionValues } from './options.js';

/** The checkout this CLI was built from. */
export const repoRoot = (): string => checkoutRoot();

export const bundledTasks = (): string => join(repoRoot(), 'tasks', 'repair-bundle.jsonl');

/**
 * The state folder (data, logs, pid files): TRIALRUN_STATE_DIR, else `.trialrun` in this checkout, so the
 * CLI finds the same stack and data from whatever folder it is started in.
 */
export const stateDir = (env: NodeJS.ProcessEnv = process.env): string => stackPaths(env).stateDir;

/** Parquet files and rejects: --data-dir, else TRIALRUN_DATA_DIR, else `data` under the state folder. */
export function dataDir(values: OptionValues = {}, env: NodeJS.ProcessEnv = process.env): string {
  const given = values['data-dir'];
  return resolve(typeof given === 'string' && given !== '' ? given : (env.TRIALRUN_DATA_DIR ?? join(stateDir(env), 'data')));
}

/**
 * The Parquet lake: --data-dir, else TRIALRUN_LAKE, else the data folder (dataDir). An `s3://bucket/prefix` URL is
 * checked here, so a malformed one is a ConfigError naming the option before anything starts.
 */
export function lakeLocation(values: OptionValues = {}, env: NodeJS.ProcessEnv = process.env): string {
  const given = values['data-dir'];
  const [option, location] = typeof given === 'string' && given !== '' ? ['--data-dir', given] : ['TRIALRUN_LAKE', env.TRIALRUN_LAKE];
  if (location === undefined || location === '') return dataDir({}, env);
  if (!isS3Url(location)) return resolve(location);
  parseS3Url(location, option);
  return location;
}

/** Help text of every --data-dir option, with the lake it resolves to now. */
export const dataDirHelp = (): string => `the analytics lake: a folder or s3://bucket/prefix (default: $TRIALRUN_LAKE, else $TRIALRUN_DATA_DIR, else ${dataDir()})`;

/**
 * Where rejects files go (a task job's `<jobRunId>.jsonl`, `import`'s, ...): TRIALRUN_REJECTS (a folder or
 * `s3://bucket/prefix`, checked here), else `rejects` beside the lake a `--data-dir s3://...` names, else `rejects`
 * under the data folder.
 */
export function rejectsLocation(values: OptionValues = {}, env: NodeJS.ProcessEnv = process.env): string {
  const given = env.TRIALRUN_REJECTS;
  if (given === undefined || given === '') {
    const dataDirOption = values['data-dir'];
    if (typeof dataDirOption === 'string' && isS3Url(dataDirOption)) return locationChild(lakeLocation(values, env), 'rejects');
    return join(dataDir(values, env), 'rejects');
  }
  if (!isS3Url(given)) return resolve(given);
  parseS3Url(given, 'TRIALRUN_REJECTS');
  return given;
}

/**
 * The rejects file `name` of a command that writes one itself (`import`): in rejectsLocation, a local file or an
 * object put whole when the command publishes it. The command calls `check()` before it reads anything, so an `s3://`
 * location that does not answer is one line, and `close()` when done.
 */
export const rejectsOutput = (name: string, values: OptionValues = {}, env: NodeJS.ProcessEnv = process.env): OutputFile =>
  outputFile(locationChild(rejectsLocation(values, env), name), 'the rejects location (TRIALRUN_REJECTS)', { env });

/** Policy artifacts: a folder under the state folder unless TRIALRUN_CHECKPOINTS names another store. */
export const checkpointsLocation = (env: NodeJS.ProcessEnv = process.env): string => env.TRIALRUN_CHECKPOINTS ?? join(stateDir(env), 'checkpoints');

export const checkpointStore = (env: NodeJS.ProcessEnv = process.env): CheckpointStore => openCheckpointStore(checkpointsLocation(env));

/** File trees kept out of records (claim checks): `artifacts` under the state folder unless TRIALRUN_ARTIFACTS names another store. */
export const artifactsLocation = (env: NodeJS.ProcessEnv = process.env): string => env.TRIALRUN_ARTIFACTS ?? join(stateDir(env), 'artifacts');

export const treeStore = (env: NodeJS.ProcessEnv = process.env): TreeStore => openTreeStore(artifactsLocation(env));

/**
 * Opens every store location the environment names (TRIALRUN_CHECKPOINTS, TRIALRUN_ARTIFACTS, TRIALRUN_LAKE,
 * TRIALRUN_EXPERIMENTS, TRIALRUN_REJECTS) and asks each
 * `s3://` one once whether its bucket answers to these credentials, so that a malformed URL, a missing bucket or
 * refused credentials is one line naming the setting, before anything is consumed. Local folders need no check.
 */
export async function checkStorageLocations(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const locations = [['TRIALRUN_CHECKPOINTS', checkpointsLocation(env)], ['TRIALRUN_ARTIFACTS', artifactsLocation(env)], ['TRIALRUN_LAKE', lakeLocation({}, env)], ['TRIALRUN_EXPERIMENTS', env.TRIALRUN_EXPERIMENTS ?? ''], ['TRIALRUN_REJECTS', rejectsLocation({}, env)]] as const;
  for (const [option, location] of locations) {
    if (!isS3Url(location)) continue;
    const store = openBlobStore(location, option, { env });
    try {
      await store.check();
    } finally {
      store.close();
    }
  }
}
