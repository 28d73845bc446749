export { checkBlobKey, sha256Hex, verifySha256, type BlobHead, type BlobInfo, type BlobStore, type PutOptions, type PutResult } from './blob-store.js';
export { LocalBlobStore } from './local/local-blob-store.js';
export { S3BlobStore } from './s3/s3-blob-store.js';
export { ensureS3Bucket } from './s3/bucket.js';
export { storageFailure } from './s3/errors.js';
export { resolveS3StoreOptions, type ResolvedS3StoreOptions, type S3StoreOptions } from './s3/options.js';
export { openBlobStore } from './open.js';
export { locationChild, outputFile, type OutputFile } from './output-file.js';
