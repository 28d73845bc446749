import { createHash } from 'node:crypto';
import { ArtifactIntegrityError, ConfigError } from '../../schemas/index.js';

/**
 * The storage port: blobs by key in one place (a local folder, an S3 bucket under a prefix). Every put records the
 * content's sha256 with it, every get is checked against the digest the caller holds (a checkpoint record, a tree
 * reference), and a conditional create (`ifAbsent`) publishes a key at most once, whoever else tries at the same
 * moment: that is what makes a checkpoint version write-once across hosts.
 */
export interface BlobStore {
  /** Where the store is, for messages: `file:///path` or `s3://bucket/prefix`. */
  readonly location: string;
  /** The URI of one key (`file:///path/key`, `s3://bucket/prefix/key`), as records and messages name it. */
  uri(key: string): string;
  /**
   * Stores `data` under `key`. With `sha256`, the bytes are checked against it before anything is sent. With
   * `ifAbsent`, a key already taken is not overwritten: the same bytes there (an earlier try of this same put) is
   * success with `created: false`; other bytes are a BlobExistsError naming both digests.
   */
  put(key: string, data: Buffer, options?: PutOptions): Promise<PutResult>;
  /** The bytes under `key`, checked against `sha256` (hex): a BlobNotFoundError or ArtifactIntegrityError names the object. */
  get(key: string, sha256: string): Promise<Buffer>;
  /** Size and recorded digest of `key`, or null when it is absent. */
  head(key: string): Promise<BlobHead | null>;
  /** Every key that starts with `prefix` (a plain string prefix, as S3 has it), sorted by key. */
  list(prefix: string): Promise<BlobInfo[]>;
  /** Removes `key`; an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** Fails at once, naming what is wrong (no such bucket, refused credentials, unreachable), before any work starts. */
  check(): Promise<void>;
  /** Releases connections and cancels retries in progress; the store is not used after it. */
  close(): void;
}

export interface PutOptions {
  /** The digest the caller computed (hex); the bytes must match it. @default computed here */
  readonly sha256?: string;
  /** Create only: never replace an existing object (S3 If-None-Match: *, a hard link locally). @default false */
  readonly ifAbsent?: boolean;
}

export interface PutResult {
  readonly key: string;
  readonly uri: string;
  /** sha256 of the bytes, hex. */
  readonly sha256: string;
  readonly bytes: number;
  /** False when `ifAbsent` found the same bytes already stored under the key. */
  readonly created: boolean;
}

export interface BlobInfo {
  readonly key: string;
  readonly bytes: number;
}

export interface BlobHead extends BlobInfo {
  /** The sha256 recorded at put (hex); null for an object put by something else that recorded none. */
  readonly sha256: string | null;
}

export const sha256Hex = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Checks a hex sha256 a caller passes in; `what` names it in the error. */
export function checkSha256(sha256: string, what: string): string {
  if (!SHA256_HEX.test(sha256)) throw new ConfigError(`${what}: "${sha256}" is not a hex sha256`);
  return sha256;
}

/**
 * Checks a key: '/'-separated parts, none empty, '.' or '..', no backslash or control character, at most 1024
 * bytes (S3's limit). Both stores apply the same rule, so a key valid on one is valid on the other.
 */
export function checkBlobKey(key: string): string {
  if (key === '' || Buffer.byteLength(key) > 1024) throw new ConfigError(`blob key "${key.slice(0, 80)}" must be 1 to 1024 bytes`);
  if (/[\\\u0000-\u001f\u007f]/.test(key)) throw new ConfigError(`blob key ${JSON.stringify(key)} holds a backslash or a control character`);
  if (key.split('/').some((part) => part === '' || part === '.' || part === '..')) throw new ConfigError(`blob key "${key}" has an empty, '.' or '..' part`);
  if (key.split('/').some((part) => part.startsWith('.tmp-'))) throw new ConfigError(`blob key "${key}" has a part starting with ".tmp-", which the local store keeps for unfinished writes`);
  return key;
}

/** A list prefix: '' (everything) or a string a key could start with. */
export function checkListPrefix(prefix: string): string {
  if (/[\\\u0000-\u001f\u007f]/.test(prefix) || prefix.startsWith('/')) throw new ConfigError(`list prefix ${JSON.stringify(prefix)} starts with '/' or holds a backslash or a control character`);
  return prefix;
}

/** Throws an ArtifactIntegrityError naming `uri` unless `data` hashes to `expected`. */
export function verifySha256(data: Buffer, expected: string, uri: string): Buffer {
  const actual = sha256Hex(data);
  if (actual !== expected) throw new ArtifactIntegrityError(`${uri} fails its sha256 check (${actual} != ${expected})`);
  return data;
}

/** The sha256 of `data`: the caller's, once checked against the bytes, or computed here. */
export function givenOrComputedSha256(data: Buffer, given: string | undefined, uri: string): string {
  if (given === undefined) return sha256Hex(data);
  verifySha256(data, checkSha256(given, `the digest given for ${uri}`), `the bytes given for ${uri}`);
  return given;
}
