import { ConfigError } from './errors.js';

/**
 * Where the stack's own S3 server (`trialrun stack up --s3`, stack/s3.ts) answers, and the development
 * credentials it accepts: the defaults of the S3 store when TRIALRUN_S3_URL and the AWS_* variables are unset.
 * Port 8433 is none of the stack's others (Kafka 9092/9093, the registry 8081, the model server 8090).
 */
export const STACK_S3_PORT = 8433;
export const STACK_S3_URL = `http://127.0.0.1:${STACK_S3_PORT}`;
/** The bucket `stack up --s3` creates, and the S3 store's default bucket. */
export const STACK_S3_BUCKET = 'trialrun';
/** The identity of the stack's own server: a local development server, so these are not secrets. */
export const STACK_S3_ACCESS_KEY_ID = 'trialrun';
export const STACK_S3_SECRET_ACCESS_KEY = 'trialrun-local-only';

/** A location in an object store: `s3://<bucket>/<prefix>`. */
export interface S3Location {
  readonly bucket: string;
  /** Key prefix without leading or trailing slashes; '' for the bucket's root. */
  readonly prefix: string;
}

/** True for a string that is meant as an `s3://` location (so that it is checked, not taken for a folder). */
export const isS3Url = (location: string): boolean => /^s3:/i.test(location);

/**
 * Parses and checks `s3://bucket/prefix` (bucket names as S3 allows them: 3-63 of a-z, 0-9, '.', '-', starting and
 * ending with a letter or digit). `option` names where the URL came from (TRIALRUN_CHECKPOINTS, --out), so the
 * error says which setting to fix.
 */
export function parseS3Url(url: string, option: string): S3Location {
  const match = /^s3:\/\/([^/?#]*)\/?([^?#]*)$/.exec(url);
  if (!match) throw new ConfigError(`${option}: "${url}" is not an s3://<bucket>/<prefix> URL`);
  const bucket = match[1]!;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes('..')) {
    throw new ConfigError(`${option}: "${bucket}" in ${url} is not an S3 bucket name (3-63 of a-z, 0-9, '.', '-', starting and ending with a letter or digit)`);
  }
  const prefix = match[2]!.replace(/\/+$/, '');
  if (prefix.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    if (prefix !== '') throw new ConfigError(`${option}: the key prefix "${prefix}" in ${url} has an empty, '.' or '..' part`);
  }
  return { bucket, prefix };
}
