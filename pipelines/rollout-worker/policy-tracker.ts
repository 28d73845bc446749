import type { Kafka, TopicReader } from '../../connectors/kafka/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { TopicSerde } from '../../connectors/registry/index.js';
import { errorMessage, type TopicNames } from '../../schemas/index.js';
import { LinearRepairPolicy } from '../../policies/index.js';

/**
 * Follows the compacted checkpoint topic and keeps the newest policy that passes its sha256 check, so
 * rollout workers pick up a new version between episodes without restarting.
 */
export class PolicyTracker {
  private policy = LinearRepairPolicy.initial();
  private reader: TopicReader | undefined;

  private constructor(private readonly pinnedVersion: number | null) {}

  /** @param pinnedVersion serve this version only (rollback) instead of the newest */
  static async follow(kafka: Kafka, serde: TopicSerde, names: TopicNames, pinnedVersion: number | null = null): Promise<PolicyTracker> {
    const tracker = new PolicyTracker(pinnedVersion);
    tracker.reader = await readTopic(kafka, {
      topic: names.name('policyCheckpoints'),
      follow: true,
      onRecord: async ({ value }) => {
        if (value === null) return;
        try {
          tracker.offer(LinearRepairPolicy.fromCheckpoint(await serde.decode('policyCheckpoints', value)));
        } catch (error) {
          process.stderr.write(`[policy-tracker] ignoring a checkpoint: ${errorMessage(error)}\n`);
        }
      },
    });
    return tracker;
  }

  current(): LinearRepairPolicy {
    return this.policy;
  }

  private offer(candidate: LinearRepairPolicy): void {
    if (this.pinnedVersion !== null ? candidate.version === this.pinnedVersion : candidate.version > this.policy.version) this.policy = candidate;
  }

  async close(): Promise<void> {
    await this.reader?.stop();
  }
}
