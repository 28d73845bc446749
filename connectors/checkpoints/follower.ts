import { CheckpointRecordError, type PolicyCheckpoint } from '../../schemas/index.js';
import type { CheckpointArtifact } from './store.js';

/**
 * The one rule for following a policy's checkpoints, shared by everything that serves a version (a rollout
 * worker's policy tracker, weight sync): serve the newest checkpoint unless a rollback pinned one, and take a
 * record only if it passes `checkCheckpoint`. How a follower reads the two topics and loads an artifact is its own.
 */

/** What a follower knows of one policy: the newest checkpoint it took (null: the initial policy), and the pin of a rollback (null: none). */
export interface FollowedCheckpoints {
  readonly newest: PolicyCheckpoint | null;
  readonly pinned: PolicyCheckpoint | null;
}

export const NOTHING_FOLLOWED: FollowedCheckpoints = { newest: null, pinned: null };

/** A record of the checkpoint topic, or of the pin topic (a pin to a checkpoint, or an unpin: null). */
export type CheckpointRecord = { readonly topic: 'checkpoint'; readonly checkpoint: PolicyCheckpoint } | { readonly topic: 'pin'; readonly checkpoint: PolicyCheckpoint | null };

export interface FollowStep {
  /** The state once the record is taken: a follower takes it after it loaded (or verified) `incoming`'s artifact, never before. */
  readonly next: FollowedCheckpoints;
  /** The checkpoint the record brings, already checked; null for an unpin. */
  readonly incoming: PolicyCheckpoint | null;
  /** What rollouts should use once `next` is taken: the pin, else the newest; null for the initial policy (version 0). */
  readonly serve: PolicyCheckpoint | null;
  /** Whether the record may change what rollouts use: a pin or an unpin always, a checkpoint when no pin holds. */
  readonly servedChanges: boolean;
  /**
   * The record is the newest checkpoint again (a redelivery, or version 0 while nothing newer was taken). A follower
   * that holds what it took has nothing to do; one whose earlier take may not have landed (a retried transaction)
   * serves it again.
   */
  readonly again: boolean;
}

/**
 * The checks every checkpoint record passes before anything of it is used: version 0 without an artifact is the
 * initial policy (for an LLM the base model; what a rollback to 0 pins), any other names an artifact whose sha256
 * is the record's. Returns that artifact, or null for the initial policy. Whether the artifact's bytes match their
 * digest is the store's check, when they are read.
 */
export function checkCheckpoint(checkpoint: PolicyCheckpoint): CheckpointArtifact | null {
  const { artifact, version } = checkpoint;
  if (!artifact) {
    if (version === 0) return null;
    throw new CheckpointRecordError(`checkpoint v${version} has no artifact`, version);
  }
  if (artifact.sha256 !== checkpoint.sha256) throw new CheckpointRecordError(`checkpoint v${version}: the record's sha256 ${checkpoint.sha256} is not its artifact's ${artifact.sha256}`, version);
  return artifact;
}

/**
 * Decides what one record does to what a follower serves. null: nothing (a checkpoint older than the newest, which
 * compaction and replays bring again). Throws CheckpointRecordError for a record that fails `checkCheckpoint`: the
 * follower keeps its state and what it serves.
 */
export function followCheckpoints(state: FollowedCheckpoints, record: CheckpointRecord): FollowStep | null {
  if (record.topic === 'checkpoint') {
    const newest = state.newest?.version ?? 0;
    if (record.checkpoint.version < newest) return null;
    checkCheckpoint(record.checkpoint);
    const next = { ...state, newest: record.checkpoint };
    return { next, incoming: record.checkpoint, serve: next.pinned ?? next.newest, servedChanges: next.pinned === null, again: record.checkpoint.version === newest };
  }
  if (record.checkpoint) checkCheckpoint(record.checkpoint);
  const next = { ...state, pinned: record.checkpoint };
  return { next, incoming: record.checkpoint, serve: next.pinned ?? next.newest, servedChanges: true, again: false };
}
