import type { CheckpointStore } from '../../connectors/checkpoints/index.js';
import type { KafkaPort, TopicReader } from '../../connectors/kafka/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { LINEAR_REPAIR_POLICY, policyKind, type AnyPolicyKind, type Policy, type PolicySettings } from '../../policies/index.js';
import { errorMessage, type PolicyCheckpoint, type TopicNames } from '../../schemas/index.js';

export interface PolicyTrackerOptions {
  store: CheckpointStore;
  /** @default 'linear-repair' */
  policyId?: string;
  /** Settings of a configurable kind (the llm policy's server and sampling). @default none */
  settings?: PolicySettings;
  /** Called when the served version changes (for logs and the reload-latency benchmark). @default none */
  onChange?: (version: number, checkpoint: PolicyCheckpoint | null) => void;
}

/**
 * Follows the compacted checkpoint and pin topics and serves the policy rollout workers should use: the
 * newest checkpoint whose artifact passes its sha256 check, or the pinned one after a rollback.
 * Workers ask between episodes, so a new version is picked up without a restart.
 */
export class PolicyTracker {
  private pinned: Policy<unknown> | null = null;
  private readonly readers: TopicReader[] = [];

  private constructor(
    private readonly options: PolicyTrackerOptions,
    /** The kind served: its id, and the environments it serves. */
    readonly kind: AnyPolicyKind<unknown>,
    private newest: Policy<unknown>,
  ) {}

  static async follow(kafka: KafkaPort, serde: TopicSerde, names: TopicNames, options: PolicyTrackerOptions): Promise<PolicyTracker> {
    const kind = policyKind(options.policyId ?? LINEAR_REPAIR_POLICY, options.settings);
    const tracker = new PolicyTracker(options, kind, await kind.load(kind.initial().params, 0));
    // Both topics are compacted and keyed by policy id; only this kind's records matter.
    const follow = async (topic: string, what: string, apply: (value: Buffer) => Promise<void>): Promise<void> => {
      const reader = await readTopic(kafka, {
        topic,
        follow: true,
        onRecord: async ({ key, value }) => {
          if (value !== null && key === kind.policyId) await tracker.guard(what, () => apply(value));
        },
      });
      tracker.readers.push(reader);
    };
    await follow(names.name('policyCheckpoints'), 'checkpoint', async (value) => {
      const checkpoint = await serde.decode('policyCheckpoints', value);
      if (checkpoint.version <= tracker.newest.version) return;
      tracker.newest = await tracker.load(checkpoint);
      if (!tracker.pinned) options.onChange?.(checkpoint.version, checkpoint);
    });
    await follow(names.name('policyPins'), 'pin', async (value) => {
      const pin = await serde.decode('policyPins', value);
      tracker.pinned = pin.checkpoint ? await tracker.load(pin.checkpoint) : null;
      options.onChange?.(tracker.current().version, pin.checkpoint);
    });
    return tracker;
  }

  current(): Policy<unknown> {
    return this.pinned ?? this.newest;
  }

  async close(): Promise<void> {
    await Promise.all(this.readers.map((reader) => reader.stop()));
  }

  private async load(checkpoint: PolicyCheckpoint): Promise<Policy<unknown>> {
    // Version 0 is the initial policy (for an LLM the base model): a rollback to it pins no artifact.
    if (checkpoint.version === 0 && !checkpoint.artifact) return this.kind.load(this.kind.initial().params, 0);
    if (!checkpoint.artifact) throw new Error(`checkpoint v${checkpoint.version} has no artifact`);
    if (checkpoint.artifact.sha256 !== checkpoint.sha256) throw new Error(`checkpoint v${checkpoint.version}: record and artifact digests differ`);
    const bytes = await this.options.store.get(checkpoint.artifact);
    return this.kind.load(this.kind.decodeParams(bytes), checkpoint.version);
  }

  /** A bad checkpoint or pin is skipped with a warning: workers keep serving the last good policy. */
  private async guard(what: string, load: () => Promise<void>): Promise<void> {
    try {
      await load();
    } catch (error) {
      process.stderr.write(`[policy-tracker] ignoring a ${what}: ${errorMessage(error)}\n`);
    }
  }
}
