import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BlobExistsError, BlobNotFoundError, ConnectionError, isRetriable, StorageError } from '../../../schemas/index.js';
import { storageFailure } from './errors.js';

/** An error shaped as @aws-sdk/client-s3 throws them: the S3 error code as its name, the HTTP status in $metadata. */
const sdkError = (name: string, status?: number, code?: string): Error => Object.assign(new Error(`${name} message`), { name, ...(status === undefined ? {} : { $metadata: { httpStatusCode: status } }), ...(code ? { code } : {}) });

test('unreachable, 5xx and throttling are retriable; refusals and missing objects are not', () => {
  const uri = 's3://b/k';
  const cases: Array<[Error, new (...args: never[]) => Error, boolean]> = [
    [sdkError('Error', undefined, 'ECONNREFUSED'), ConnectionError, true],
    [sdkError('TimeoutError'), ConnectionError, true],
    [sdkError('InternalError', 500), StorageError, true],
    [sdkError('ServiceUnavailable', 503), StorageError, true],
    [sdkError('SlowDown', 503), StorageError, true],
    [sdkError('Unknown', 429), StorageError, true],
    [sdkError('NoSuchKey', 404), BlobNotFoundError, false],
    [sdkError('NotFound', 404), BlobNotFoundError, false],
    [sdkError('PreconditionFailed', 412), BlobExistsError, false],
    [sdkError('AccessDenied', 403), StorageError, false],
    [sdkError('InvalidAccessKeyId', 403), StorageError, false],
    [sdkError('NoSuchBucket', 404), StorageError, false],
    [sdkError('InvalidArgument', 400), StorageError, false],
  ];
  for (const [raw, kind, retriable] of cases) {
    const mapped = storageFailure(raw, uri);
    assert.ok(mapped instanceof kind, `${raw.name}: ${mapped.constructor.name}`);
    assert.equal(isRetriable(mapped), retriable, raw.name);
    assert.ok(mapped.message.includes(uri), mapped.message);
  }
  assert.match(storageFailure(sdkError('NoSuchBucket', 404), uri).message, /bucket does not exist/);
  assert.match(storageFailure(sdkError('SignatureDoesNotMatch', 403), uri).message, /AWS_SECRET_ACCESS_KEY/);
});
