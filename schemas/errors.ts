/**
 * Every error trialrun raises on purpose. Each carries `retriable`, the single flag the retry middleware
 * reads: retriable errors are retried with backoff, the rest go straight to the dead-letter topic.
 */
export class TrialrunError extends Error {
  readonly retriable: boolean;

  constructor(message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable ?? false;
  }
}

/** Bytes that are not a registry-framed record, or a schema id the registry does not know. */
export class DecodeError extends TrialrunError {}

/** A decoded value that breaks its zod contract; names the failing fields. */
export class ValidationError extends TrialrunError {
  constructor(
    readonly what: string,
    readonly issues: readonly string[],
  ) {
    super(`${what} is invalid: ${issues.join('; ')}`);
  }
}

/** A handler ran past its time budget. Retriable: the next try may land on a less busy machine. */
export class TimeoutError extends TrialrunError {
  constructor(what: string, readonly timeoutMs: number) {
    super(`${what} timed out after ${timeoutMs} ms`, { retriable: true });
  }
}

/** The Docker engine, a container or the in-sandbox tooling failed (not the agent's code). */
export class SandboxError extends TrialrunError {}

/** Why a sandbox turned a file request down: what was asked is wrong, the sandbox is fine. */
export type WorkspaceRefusal = 'bad-path' | 'bad-content' | 'missing' | 'directory' | 'not-a-file' | 'too-large' | 'not-utf8' | 'no-space' | 'denied' | 'io';

/**
 * A sandbox refused a file request for what it asked: a path that is absolute, goes up with '..' or through a
 * symlink out of the workspace, a missing file, a directory, a file too large or not UTF-8, a full disk.
 * Never retried (the same request fails the same way); an environment shows the message to the agent.
 */
export class WorkspaceFileError extends TrialrunError {
  constructor(
    message: string,
    readonly reason: WorkspaceRefusal,
  ) {
    super(message);
  }
}

/** A broker, registry or engine did not answer; usually transient. */
export class ConnectionError extends TrialrunError {
  constructor(message: string, cause?: unknown) {
    super(message, { retriable: true, cause });
  }
}

/**
 * The Kafka client reported a failure other than an unreachable broker. `retriable` is the client's own
 * verdict (a coordinator moving, a rebalance), never for a fenced producer or an aborted transaction: those
 * end the work they were part of, which is redone from the last commit. `code` is the client's error code.
 */
export class KafkaError extends TrialrunError {
  constructor(
    message: string,
    readonly code: string,
    options: { retriable: boolean; cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A record too large for its topic: larger than the topic's max.message.bytes (the broker's message.max.bytes
 * where the topic sets none) or the producing client's own cap, found before it was sent or refused by the broker
 * ("Message size too large"). Never retriable: the same record is refused the same way, so the input that made it
 * goes to the dead-letter topic with this reason and its partition moves on. `bytes` is the record's size where
 * known (null when only the broker's refusal says so), `limit` the cap it broke where known.
 */
export class RecordTooLargeError extends TrialrunError {
  constructor(
    message: string,
    readonly topic: string | null,
    readonly bytes: number | null,
    readonly limit: number | null,
    cause?: unknown,
  ) {
    super(message, { retriable: false, cause });
  }
}

/**
 * The host a handler runs on cannot do its work: its sandbox engine or a blob store it reads and writes (S3) does not
 * answer (checked after a failure).
 * Not retriable, and never dead-lettered: the record is not at fault. A stream processor that sees it aborts the
 * record's transaction and leaves its consumer group until the host answers again, so that a healthy member of
 * the group takes over its partitions (see StreamProcessor, ProcessorOptions.hostAvailable).
 */
export class HostUnavailableError extends TrialrunError {
  constructor(what: string, cause?: unknown) {
    super(`${what}: what the host needs (its sandbox engine, its blob stores) does not answer`, { cause });
  }
}

/**
 * An object store (S3 or a local folder behind the storage port) failed. `retriable` says whether trying again may
 * help: an unreachable server, a 5xx or throttling yes; a refusal (AccessDenied, NoSuchBucket) no. `code` is the
 * store's own error code (`SlowDown`, `AccessDenied`, `EACCES`, ...), `object` the `s3://` or `file:` URI it concerned.
 */
export class StorageError extends TrialrunError {
  constructor(
    message: string,
    readonly code: string,
    readonly object: string,
    options: { retriable: boolean; cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The object a reference names is not in the store: never retried (a stored reference that points nowhere will not start to). */
export class BlobNotFoundError extends StorageError {
  constructor(object: string, cause?: unknown) {
    super(`${object} is not in the store`, 'NoSuchKey', object, { retriable: false, cause });
  }
}

/**
 * A conditional create found the key taken: another writer published it first. Never retried; a caller that
 * publishes write-once (a checkpoint version) compares digests to tell its own earlier try from a rival.
 */
export class BlobExistsError extends StorageError {
  constructor(object: string, detail = '', cause?: unknown) {
    super(`${object} already exists${detail ? ` ${detail}` : ''}`, 'PreconditionFailed', object, { retriable: false, cause });
  }
}

/** Stored bytes do not match the digest they were published with: never retried, never used. */
export class ArtifactIntegrityError extends TrialrunError {}

/**
 * A checkpoint record no follower may take: a version above 0 that names no artifact, or a record whose sha256 is
 * not its artifact's. Never retriable (the same record fails the same way). Weight sync dead-letters it, a rollout
 * worker's policy tracker skips it; both keep serving what they served (connectors/checkpoints, followCheckpoints).
 */
export class CheckpointRecordError extends TrialrunError {
  constructor(
    message: string,
    readonly version: number,
  ) {
    super(message, { retriable: false });
  }
}

/** A user-supplied option or file is wrong; never retried. */
export class ConfigError extends TrialrunError {}

/** A process trialrun started (the Python LLM learner) exited on its own, or with a failure status; never retried. */
export class ProcessExitError extends TrialrunError {}

/** A referenced record (a task for a trajectory, say) is not known yet; retried in case it is in flight. */
export class NotFoundError extends TrialrunError {
  constructor(message: string) {
    super(message, { retriable: true });
  }
}

/**
 * The loop ran past its deadline with work still due. Not retriable: running the same loop again gives the
 * same wait; what it waited on (`waitingOn`) and how far it got (`progress`) say where to look.
 */
export class LoopDeadlineError extends TrialrunError {
  constructor(
    readonly timeoutMs: number,
    readonly progress: unknown,
    readonly waitingOn: readonly string[],
  ) {
    super(`the loop did not finish within ${timeoutMs} ms: ${JSON.stringify(progress)}; still waiting on ${waitingOn.join(', ')}`);
  }
}

/** Work was cancelled because the process is shutting down; never dead-lettered. */
export class ShutdownError extends TrialrunError {
  constructor() {
    super('processing was cancelled by shutdown');
  }
}

/** Reads the retriable flag of any thrown value; unknown errors are not retried (fail fast into the DLQ). */
export function isRetriable(error: unknown): boolean {
  return error instanceof TrialrunError ? error.retriable : false;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
