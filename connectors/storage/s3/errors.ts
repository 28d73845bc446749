import { BlobExistsError, BlobNotFoundError, ConnectionError, StorageError } from '../../../schemas/index.js';

/** Codes S3 (and S3-compatible servers) answer when they want the client to slow down or try again. */
const THROTTLING = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'RequestThrottled', 'RequestLimitExceeded', 'TooManyRequestsException', 'RequestTimeout', 'InternalError', 'ServiceUnavailable', 'BadDigest']);
/** Node's codes for a server that cannot be reached (or stopped answering). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);
const CREDENTIALS = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken', 'CredentialsProviderError']);

interface SdkError {
  name?: string;
  code?: string;
  Code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

/**
 * An SDK failure as the taxonomy has it, naming the object it concerned. Unreachable: ConnectionError (retriable).
 * 5xx, 429 and throttling codes: a retriable StorageError. A missing key: BlobNotFoundError; a lost conditional
 * create: BlobExistsError; AccessDenied, refused credentials, NoSuchBucket and every other 4xx: a StorageError that
 * is not retried, since the same request fails the same way.
 */
export function storageFailure(error: unknown, object: string): Error {
  if (error instanceof StorageError || error instanceof ConnectionError) return error;
  const e = (error ?? {}) as SdkError;
  const status = e.$metadata?.httpStatusCode;
  const code = e.Code ?? e.name ?? e.code ?? 'Unknown';
  const networkCode = e.code ?? (e as { cause?: { code?: string } }).cause?.code;
  const text = e.message && e.message !== 'UnknownError' ? e.message : `HTTP ${status ?? '?'}`;
  if (status === undefined && (UNREACHABLE.has(networkCode ?? '') || code === 'TimeoutError' || code === 'RequestTimeout' || code === 'AbortError')) {
    return new ConnectionError(`cannot reach the S3 server for ${object}: ${e.message ?? code}`, error);
  }
  if (code === 'NoSuchKey' || (status === 404 && code !== 'NoSuchBucket' && code !== 'NoSuchUpload')) return new BlobNotFoundError(object, error);
  if (code === 'PreconditionFailed' || status === 412) return new BlobExistsError(object, '', error);
  if (code === 'NoSuchBucket') return new StorageError(`${object}: the bucket does not exist (${text}); create it, or name another in the s3:// URL`, code, object, { retriable: false, cause: error });
  if (CREDENTIALS.has(code)) return new StorageError(`${object}: the S3 server refused the credentials (${code}); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`, code, object, { retriable: false, cause: error });
  if (code === 'AccessDenied' || status === 403) return new StorageError(`${object}: access denied (${code === 'AccessDenied' ? text : code}); check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy`, code, object, { retriable: false, cause: error });
  if (THROTTLING.has(code) || status === 429 || (status !== undefined && status >= 500)) {
    return new StorageError(`${object}: the S3 server answered ${code} (HTTP ${status ?? '?'}); trying again`, code, object, { retriable: true, cause: error });
  }
  return new StorageError(`${object}: ${code}: ${text}`, code, object, { retriable: e.$retryable !== undefined, cause: error });
}
