import { checkCheckpoint, followCheckpoints, NOTHING_FOLLOWED, type CheckpointRecord, type CheckpointStore, type FollowedCheckpoints } from '../../connectors/checkpoints/index.js';
import type { KafkaPort, TopicReader } from '../../connectors/kafka/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { LINEAR_REPAIR_POLICY, policyKind, type AnyPolicyKind, type Policy, type PolicySettings } from '../../policies/index.js';
import { errorMessage, resolveRetryOptions, withRetries, type PolicyCheckpoint, type ResolvedRetryOptions, type RetryOptions, type TopicNames } from '../../schemas/index.js';

export interface PolicyTrackerOptions {
  store: CheckpointStore;
  /** @default 'linear-repair' */
  policyId?: string;
  /** Settings of a configurable kind (the llm policy's server and sampling). @default none */
  settings?: PolicySettings;
  /** Called when the served version changes (for logs and the reload-latency benchmark). @default none */
  onChange?: (version: number, checkpoint: PolicyCheckpoint | null) => void;
  /**
   * Backoff for an artifact the store cannot give right now (S3 unreachable, a 5xx: retriable errors only), so an
   * outage delays a version instead of skipping it. A missing or changed artifact is not retried: that checkpoint is
   * ignored. @default { retries: 720, initialDelayMs: 1000, maxDelayMs: 5000 } (about an hour)
   */
  storeRetry?: RetryOptions;
}

/**
 * Follows the compacted checkpoint and pin topics and serves the policy rollout workers should use, as
 * `followCheckpoints` decides: the newest checkpoint whose artifact passes its sha256 check, or the pinned one
 * after a rollback. Workers ask between episodes, so a new version is picked up without a restart.
 */
export class PolicyTracker {
  private followed: FollowedCheckpoints = NOTHING_FOLLOWED;
  private pinned: Policy<unknown> | null = null;
  private readonly readers: TopicReader[] = [];
  /** Records of both topics are taken one at a time, in arrival order, as weight sync takes them. */
  private taking: Promise<void> = Promise.resolve();
  /** Aborted by close(): ends the waits for a store that does not answer. */
  private readonly closing = new AbortController();
  private readonly storeRetry: ResolvedRetryOptions;

  private constructor(
    private readonly options: PolicyTrackerOptions,
    /** The kind served: its id, and the environments it serves. */
    readonly kind: AnyPolicyKind<unknown>,
    private newest: Policy<unknown>,
  ) {
    this.storeRetry = resolveRetryOptions({ retries: 720, initialDelayMs: 1000, maxDelayMs: 5000, ...options.storeRetry });
  }

  static async follow(kafka: KafkaPort, serde: TopicSerde, names: TopicNames, options: PolicyTrackerOptions): Promise<PolicyTracker> {
    const kind = policyKind(options.policyId ?? LINEAR_REPAIR_POLICY, options.settings);
    const tracker = new PolicyTracker(options, kind, await kind.load(kind.initial().params, 0));
    // Both topics are compacted and keyed by policy id; only this kind's records matter.
    const follow = async (topic: string, what: CheckpointRecord['topic'], decode: (value: Buffer) => Promise<CheckpointRecord>): Promise<void> => {
      const reader = await readTopic(kafka, {
        topic,
        follow: true,
        onRecord: async ({ key, value }) => {
          if (value !== null && key === kind.policyId) await tracker.take(what, () => decode(value));
        },
      });
      tracker.readers.push(reader);
    };
    await follow(names.name('policyCheckpoints'), 'checkpoint', async (value) => ({ topic: 'checkpoint', checkpoint: await serde.decode('policyCheckpoints', value) }));
    await follow(names.name('policyPins'), 'pin', async (value) => ({ topic: 'pin', checkpoint: (await serde.decode('policyPins', value)).checkpoint }));
    return tracker;
  }

  current(): Policy<unknown> {
    return this.pinned ?? this.newest;
  }

  async close(): Promise<void> {
    this.closing.abort();
    await Promise.all(this.readers.map((reader) => reader.stop()));
  }

  private take(what: CheckpointRecord['topic'], decode: () => Promise<CheckpointRecord>): Promise<void> {
    const taken = this.taking.then(() => this.guard(what, decode));
    this.taking = taken;
    return taken;
  }

  /** A bad checkpoint or pin is skipped with a warning: workers keep serving the last good policy. */
  private async guard(what: CheckpointRecord['topic'], decode: () => Promise<CheckpointRecord>): Promise<void> {
    try {
      const record = await decode();
      const step = followCheckpoints(this.followed, record);
      // The newest again is the policy already loaded.
      if (step === null || step.again) return;
      const policy = step.incoming ? await this.load(step.incoming) : null;
      this.followed = step.next;
      if (record.topic === 'checkpoint') this.newest = policy!;
      else this.pinned = policy;
      if (step.servedChanges) this.options.onChange?.(this.current().version, record.checkpoint);
    } catch (error) {
      process.stderr.write(`[policy-tracker] ignoring a ${what}: ${errorMessage(error)}\n`);
    }
  }

  /** The policy of a checkpoint `followCheckpoints` accepted: the store checks its bytes against their sha256. */
  private async load(checkpoint: PolicyCheckpoint): Promise<Policy<unknown>> {
    const artifact = checkCheckpoint(checkpoint);
    if (artifact === null) return this.kind.load(this.kind.initial().params, 0);
    const bytes = await withRetries(() => this.options.store.get(artifact), this.storeRetry, this.closing.signal);
    return this.kind.load(this.kind.decodeParams(bytes), checkpoint.version);
  }
}
