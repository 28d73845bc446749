import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { BlobExistsError, BlobNotFoundError, ConfigError, parseS3Url, StorageError, withRetries, type S3Location } from '../../../schemas/index.js';
import { checkBlobKey, checkListPrefix, checkSha256, givenOrComputedSha256, verifySha256, type BlobHead, type BlobInfo, type BlobStore, type PutOptions, type PutResult } from '../blob-store.js';
import { storageFailure } from './errors.js';
import { resolveS3StoreOptions, type ResolvedS3StoreOptions, type S3StoreOptions } from './options.js';

// The SDK warns once per process that its releases after January 2027 need Node 22; this project runs on the
// Node 20 its machines have, and a warning on every command's stderr would bury the lines that matter.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** The user metadata key (x-amz-meta-sha256) that records a put's digest in hex: S3's own checksum is base64 and, for multipart objects, a checksum of checksums. */
const SHA256_METADATA = 'sha256';

/**
 * Blobs in an S3 bucket under a key prefix, through @aws-sdk/client-s3. The SDK's own retries are off: every call
 * goes through the project's retry module with its failures mapped to the taxonomy (s3/errors.ts). A put sends
 * the content's sha256 both as S3's checksum (the server refuses bytes that arrive changed) and as metadata (what
 * head reports); objects above `multipartThresholdBytes` go up as a multipart upload whose parts are retried one by
 * one. `ifAbsent` is If-None-Match: * on PutObject or CompleteMultipartUpload, so the object appears whole or not
 * at all, and of two writers exactly one creates it.
 */
export class S3BlobStore implements BlobStore {
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  readonly options: ResolvedS3StoreOptions;
  private readonly client: S3Client;
  private readonly stopping = new AbortController();

  /** `url` is `s3://bucket/prefix`; `option` names where it came from, for the error when it is malformed. */
  constructor(url: string, options: S3StoreOptions = {}, option = 'the s3:// location') {
    const { bucket, prefix }: S3Location = parseS3Url(url, option);
    this.bucket = bucket;
    this.prefix = prefix;
    this.location = `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
    this.options = resolveS3StoreOptions(options);
    // Each request in flight listens on this one signal until it completes (none are left behind: counted after
    // 100 requests), and a tree's blobs go 16 at a time: more than Node's default warning threshold of 10.
    setMaxListeners(0, this.stopping.signal);
    this.client = new S3Client({
      region: this.options.region,
      ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
      forcePathStyle: this.options.forcePathStyle,
      ...(this.options.credentials ? { credentials: this.options.credentials } : {}),
      maxAttempts: 1,
      requestHandler: { connectionTimeout: Math.min(this.options.requestTimeoutMs, 5_000), requestTimeout: this.options.requestTimeoutMs },
    });
  }

  uri(key: string): string {
    return `s3://${this.bucket}/${this.objectKey(key)}`;
  }

  async put(key: string, data: Buffer, options: PutOptions = {}): Promise<PutResult> {
    const uri = this.uri(key);
    const sha256 = givenOrComputedSha256(data, options.sha256, uri);
    const result = { key, uri, sha256, bytes: data.length, created: true };
    try {
      if (data.length > this.options.multipartThresholdBytes) await this.putMultipart(key, data, sha256, options.ifAbsent === true);
      else {
        await this.send(uri, () =>
          this.client.send(
            new PutObjectCommand({
              Bucket: this.bucket,
              Key: this.objectKey(key),
              Body: data,
              ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
              Metadata: { [SHA256_METADATA]: sha256 },
              ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
            }),
          ),
        );
      }
      return result;
    } catch (error) {
      if (!(error instanceof BlobExistsError)) throw error;
      // A conditional create that lost: to an earlier try of this same put (its answer lost on the way), or to a rival.
      const existing = await this.head(key);
      if (existing?.sha256 === sha256) return { ...result, created: false };
      throw new BlobExistsError(uri, `with sha256 ${existing?.sha256 ?? '(none recorded)'}, not ${sha256}`, error);
    }
  }

  async get(key: string, sha256: string): Promise<Buffer> {
    const uri = this.uri(key);
    checkSha256(sha256, `the digest expected of ${uri}`);
    const data = await this.send(uri, async () => {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }), { abortSignal: this.stopping.signal });
      // Reading the body is part of the try: a connection that drops mid-body is retried like one that never opened.
      return Buffer.from(await answer.Body!.transformToByteArray());
    });
    return verifySha256(data, sha256, uri);
  }

  async head(key: string): Promise<BlobHead | null> {
    const uri = this.uri(key);
    try {
      const answer = await this.send(uri, () => this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }), { abortSignal: this.stopping.signal }));
      const recorded = answer.Metadata?.[SHA256_METADATA];
      return { key, bytes: answer.ContentLength ?? 0, sha256: recorded !== undefined && /^[0-9a-f]{64}$/.test(recorded) ? recorded : null };
    } catch (error) {
      if (error instanceof BlobNotFoundError) return null;
      throw error;
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    checkListPrefix(prefix);
    const base = this.prefix ? `${this.prefix}/` : '';
    const found: BlobInfo[] = [];
    let token: string | undefined;
    do {
      const page = await this.send(`${this.location}/${prefix}`, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base + prefix, ContinuationToken: token }), { abortSignal: this.stopping.signal }),
      );
      for (const object of page.Contents ?? []) if (object.Key !== undefined) found.push({ key: object.Key.slice(base.length), bytes: object.Size ?? 0 });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    const uri = this.uri(key);
    await this.send(uri, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }), { abortSignal: this.stopping.signal }));
  }

  /** HEADs the bucket once (no retries): a missing bucket, refused credentials or an unreachable server is one ConfigError naming the setting. */
  async check(): Promise<void> {
    const where = `${this.location} at ${this.options.endpoint ?? `AWS (${this.options.region})`}`;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: this.stopping.signal });
    } catch (raw) {
      const error = storageFailure(raw, `s3://${this.bucket}`);
      const status = (raw as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404 || (error instanceof StorageError && error.code === 'NoSuchBucket')) throw new ConfigError(`${where}: bucket "${this.bucket}" does not exist`);
      if (status === 403 || status === 400) throw new ConfigError(`${where}: the server refused the credentials or access to bucket "${this.bucket}" (HTTP ${status}); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`);
      if (error instanceof StorageError || error.name === 'ConnectionError') throw new ConfigError(`${where}: ${error.message}; is TRIALRUN_S3_URL right, and is the server up (trialrun stack up --s3)?`);
      throw error;
    }
  }

  /** Cancels retries in progress and closes the client's connections. */
  close(): void {
    this.stopping.abort();
    this.client.destroy();
  }

  private objectKey(key: string): string {
    checkBlobKey(key);
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private send<T>(uri: string, request: () => Promise<T>): Promise<T> {
    return withRetries(async () => {
      try {
        return await request();
      } catch (error) {
        throw storageFailure(error, uri);
      }
    }, this.options.retry, this.stopping.signal);
  }

  private async putMultipart(key: string, data: Buffer, sha256: string, ifAbsent: boolean): Promise<void> {
    const uri = this.uri(key);
    const Key = this.objectKey(key);
    const started = await this.send(uri, () =>
      this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key, Metadata: { [SHA256_METADATA]: sha256 } }), { abortSignal: this.stopping.signal }),
    );
    const UploadId = started.UploadId!;
    try {
      const count = Math.ceil(data.length / this.options.partBytes);
      const etags: string[] = new Array<string>(count);
      let next = 0;
      const uploader = async (): Promise<void> => {
        for (let index = next++; index < count; index = next++) {
          const body = data.subarray(index * this.options.partBytes, Math.min(data.length, (index + 1) * this.options.partBytes));
          const md5 = createHash('md5').update(body).digest('base64');
          const part = await this.send(`${uri} (part ${index + 1} of ${count})`, () =>
            this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key, UploadId, PartNumber: index + 1, Body: body, ContentMD5: md5 }), { abortSignal: this.stopping.signal }),
          );
          etags[index] = part.ETag!;
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.options.partConcurrency, count) }, uploader));
      await this.send(uri, () =>
        this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key,
            UploadId,
            MultipartUpload: { Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })) },
            ...(ifAbsent ? { IfNoneMatch: '*' } : {}),
          }),
          { abortSignal: this.stopping.signal },
        ),
      );
    } catch (error) {
      // Parts of an upload that never completes are invisible to readers but cost storage until aborted.
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId })).catch(() => undefined);
      throw error;
    }
  }
}
