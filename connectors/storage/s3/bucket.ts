import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { parseS3Url } from '../../../schemas/index.js';
import { storageFailure } from './errors.js';
import { resolveS3StoreOptions, type S3StoreOptions } from './options.js';

/**
 * Creates the bucket of `url` (`s3://bucket`) unless it exists; for the stack's own server and for tests, which make
 * buckets of their own. A store never creates its bucket: a missing one is a misconfiguration it reports.
 */
export async function ensureS3Bucket(url: string, options: S3StoreOptions = {}): Promise<void> {
  const { bucket } = parseS3Url(url, 'the bucket to create');
  const resolved = resolveS3StoreOptions(options);
  const client = new S3Client({
    region: resolved.region,
    ...(resolved.endpoint ? { endpoint: resolved.endpoint } : {}),
    forcePathStyle: resolved.forcePathStyle,
    ...(resolved.credentials ? { credentials: resolved.credentials } : {}),
    maxAttempts: 1,
  });
  try {
    const exists = await client.send(new HeadBucketCommand({ Bucket: bucket })).then(
      () => true,
      (error: unknown) => {
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
        throw storageFailure(error, `s3://${bucket}`);
      },
    );
    if (exists) return;
    await client.send(new CreateBucketCommand({ Bucket: bucket })).catch((error: unknown) => {
      const code = (error as { name?: string }).name;
      if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw storageFailure(error, `s3://${bucket}`);
    });
  } finally {
    client.destroy();
  }
}
