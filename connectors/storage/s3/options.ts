import { ConfigError, requireOption, resolveRetryOptions, STACK_S3_ACCESS_KEY_ID, STACK_S3_SECRET_ACCESS_KEY, STACK_S3_URL, wholeNumber, type ResolvedRetryOptions, type RetryOptions } from '../../../schemas/index.js';

const MIB = 1024 * 1024;

export interface S3StoreOptions {
  /**
   * The S3 endpoint: the stack's own server, MinIO, Ceph, R2, GCS's XML API. Unset (and TRIALRUN_S3_URL unset), the
   * stack's server; 'aws' means AWS itself (the endpoint the SDK derives from the region).
   * @default env TRIALRUN_S3_URL, else STACK_S3_URL
   */
  readonly endpoint?: string;
  /** @default env AWS_REGION, else AWS_DEFAULT_REGION, else 'us-east-1' */
  readonly region?: string;
  /** @default env AWS_ACCESS_KEY_ID; with neither set and the stack's endpoint, the stack server's own key; else the SDK's credential chain */
  readonly accessKeyId?: string;
  /** @default env AWS_SECRET_ACCESS_KEY (as accessKeyId) */
  readonly secretAccessKey?: string;
  /** @default env AWS_SESSION_TOKEN */
  readonly sessionToken?: string;
  /** Path-style URLs (`endpoint/bucket/key`), which S3-compatible servers expect; AWS takes virtual-hosted ones. @default true unless the endpoint is AWS */
  readonly forcePathStyle?: boolean;
  /** Objects larger than this go up in parts (multipart upload), each retried on its own. @default 16 MiB */
  readonly multipartThresholdBytes?: number;
  /** Size of each part but the last; S3 needs at least 5 MiB. @default 8 MiB */
  readonly partBytes?: number;
  /** Parts in flight at once. @default 4 */
  readonly partConcurrency?: number;
  /** One request's deadline (connection and the whole response). @default 30_000 */
  readonly requestTimeoutMs?: number;
  /** Retries of retriable failures (unreachable, 5xx, throttling), through schemas/retry.ts; the SDK's own retry is off. @default resolveRetryOptions() */
  readonly retry?: RetryOptions;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

export interface ResolvedS3StoreOptions {
  /** null: AWS itself. */
  readonly endpoint: string | null;
  readonly region: string;
  /** null: the SDK's default credential chain (instance roles, profiles). */
  readonly credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
  readonly forcePathStyle: boolean;
  readonly multipartThresholdBytes: number;
  readonly partBytes: number;
  readonly partConcurrency: number;
  readonly requestTimeoutMs: number;
  readonly retry: ResolvedRetryOptions;
}

/** Resolves and checks the S3 options once, naming the option (or variable) that is wrong. */
export function resolveS3StoreOptions(options: S3StoreOptions = {}): ResolvedS3StoreOptions {
  const env = options.env ?? process.env;
  const rawEndpoint = (options.endpoint ?? env.TRIALRUN_S3_URL ?? STACK_S3_URL).trim();
  let endpoint: string | null = null;
  if (rawEndpoint !== 'aws') {
    let url: URL;
    try {
      url = new URL(rawEndpoint);
    } catch {
      throw new ConfigError(`TRIALRUN_S3_URL (S3StoreOptions.endpoint): "${rawEndpoint}" is not a URL; give the S3 endpoint as http(s)://host:port, or 'aws'`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(`TRIALRUN_S3_URL (S3StoreOptions.endpoint): "${rawEndpoint}" is not http(s); it is the server's endpoint (an s3://bucket/prefix location goes in TRIALRUN_CHECKPOINTS, TRIALRUN_ARTIFACTS, ...)`);
    }
    if (url.pathname !== '/' || url.search !== '') throw new ConfigError(`TRIALRUN_S3_URL (S3StoreOptions.endpoint): "${rawEndpoint}" has a path or query; give the server's root`);
    endpoint = url.origin;
  }
  const accessKeyId = options.accessKeyId ?? env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = options.secretAccessKey ?? env.AWS_SECRET_ACCESS_KEY;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(`AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: only ${accessKeyId === undefined ? 'AWS_SECRET_ACCESS_KEY' : 'AWS_ACCESS_KEY_ID'} is set`);
  }
  const sessionToken = options.sessionToken ?? env.AWS_SESSION_TOKEN;
  const credentials =
    accessKeyId !== undefined
      ? { accessKeyId, secretAccessKey: secretAccessKey!, ...(sessionToken ? { sessionToken } : {}) }
      : endpoint === STACK_S3_URL
        ? { accessKeyId: STACK_S3_ACCESS_KEY_ID, secretAccessKey: STACK_S3_SECRET_ACCESS_KEY }
        : null;
  const resolved: ResolvedS3StoreOptions = {
    endpoint,
    region: options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    credentials,
    forcePathStyle: options.forcePathStyle ?? endpoint !== null,
    multipartThresholdBytes: options.multipartThresholdBytes ?? 16 * MIB,
    partBytes: options.partBytes ?? 8 * MIB,
    partConcurrency: options.partConcurrency ?? 4,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    retry: resolveRetryOptions(options.retry),
  };
  requireOption(Number.isSafeInteger(resolved.partBytes) && resolved.partBytes >= 5 * MIB, 'S3StoreOptions.partBytes', "a whole number of bytes >= 5 MiB (S3's smallest part)", resolved.partBytes);
  if (!Number.isInteger(resolved.multipartThresholdBytes) || resolved.multipartThresholdBytes < resolved.partBytes) {
    throw new ConfigError(`S3StoreOptions.multipartThresholdBytes (${resolved.multipartThresholdBytes}) must be at least partBytes (${resolved.partBytes})`);
  }
  wholeNumber('S3StoreOptions.partConcurrency', resolved.partConcurrency, { min: 1 });
  if (!(resolved.requestTimeoutMs > 0)) throw new ConfigError(`S3StoreOptions.requestTimeoutMs must be > 0, got ${resolved.requestTimeoutMs}`);
  return resolved;
}
