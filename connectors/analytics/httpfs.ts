import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ConfigError } from '../../schemas/index.js';
import { resolveS3StoreOptions, type S3StoreOptions } from '../storage/index.js';
import { sqlString } from './sql.js';

/**
 * The DuckDB release whose httpfs extension the `duckdb-extension-httpfs` wheel ships, and so the release
 * @duckdb/node-api is pinned to (package.json): DuckDB loads an extension only into the release it was built for,
 * and here nothing may be downloaded at run time (docs/analytics.md, "The lake on S3").
 */
export const DUCKDB_HTTPFS_VERSION = '1.5.5';

/** The virtualenv `stack up --s3` installs the wheel into, under the per-user cache. */
export const httpfsVenvDir = (env: NodeJS.ProcessEnv = process.env): string =>
  join(resolve(env.TRIALRUN_CACHE_DIR ?? join(homedir(), '.cache', 'trialrun')), `duckdb-extension-httpfs-${DUCKDB_HTTPFS_VERSION}-venv`);

/**
 * The httpfs extension file: TRIALRUN_DUCKDB_HTTPFS, else the one in the wheel's virtualenv (`stack up --s3`
 * installs it once). A ConfigError says how to get it when it is missing.
 */
export function httpfsExtensionPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TRIALRUN_DUCKDB_HTTPFS) {
    if (!existsSync(env.TRIALRUN_DUCKDB_HTTPFS)) throw new ConfigError(`TRIALRUN_DUCKDB_HTTPFS: no file ${env.TRIALRUN_DUCKDB_HTTPFS}`);
    return env.TRIALRUN_DUCKDB_HTTPFS;
  }
  const venv = httpfsVenvDir(env);
  const lib = join(venv, 'lib');
  for (const python of existsSync(lib) ? readdirSync(lib) : []) {
    const file = join(lib, python, 'site-packages', 'duckdb_extension_httpfs', 'extensions', `v${DUCKDB_HTTPFS_VERSION}`, 'httpfs.duckdb_extension');
    if (existsSync(file)) return file;
  }
  throw new ConfigError(
    `reading the lake from s3:// needs DuckDB's httpfs extension, which is not installed in ${venv}; run 'trialrun stack up --s3' once (it installs the duckdb-extension-httpfs ${DUCKDB_HTTPFS_VERSION} wheel there), or set TRIALRUN_DUCKDB_HTTPFS to the extension file`,
  );
}

/** DuckDB settings that keep it from fetching any extension by itself. */
export const NO_EXTENSION_DOWNLOADS = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' } as const;

/**
 * Lets a connection read `s3://` URLs: loads httpfs from its local file (never downloaded) and makes a secret for the
 * same endpoint and credentials the storage port uses (TRIALRUN_S3_URL, AWS_*), scoped to `bucket`.
 */
export async function enableS3Reads(connection: DuckDBConnection, bucket: string, s3: S3StoreOptions = {}): Promise<void> {
  const version = String((await connection.runAndReadAll('SELECT version()')).getRowsJson()[0]![0]);
  if (version !== `v${DUCKDB_HTTPFS_VERSION}`) {
    throw new ConfigError(`this DuckDB is ${version}, but the httpfs extension here is built for v${DUCKDB_HTTPFS_VERSION}; install the @duckdb/node-api that package.json pins (npm ci)`);
  }
  await connection.run(`LOAD ${sqlString(httpfsExtensionPath(s3.env))}`);
  const resolved = resolveS3StoreOptions(s3);
  if (!resolved.credentials) throw new ConfigError('reading the lake from s3:// with DuckDB needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (DuckDB has no access to the SDK credential chain here)');
  const { accessKeyId, secretAccessKey, sessionToken } = resolved.credentials;
  const fields = [
    'TYPE s3',
    `KEY_ID ${sqlString(accessKeyId)}`,
    `SECRET ${sqlString(secretAccessKey)}`,
    ...(sessionToken ? [`SESSION_TOKEN ${sqlString(sessionToken)}`] : []),
    `REGION ${sqlString(resolved.region)}`,
    `URL_STYLE ${sqlString(resolved.forcePathStyle ? 'path' : 'vhost')}`,
    `SCOPE ${sqlString(`s3://${bucket}`)}`,
  ];
  if (resolved.endpoint) {
    const url = new URL(resolved.endpoint);
    fields.push(`ENDPOINT ${sqlString(url.host)}`, `USE_SSL ${url.protocol === 'https:' ? 'true' : 'false'}`);
  }
  await connection.run(`CREATE OR REPLACE TEMPORARY SECRET trialrun_lake (${fields.join(', ')})`);
}
