import type { KafkaConsumer, KafkaPort } from '../../connectors/kafka/index.js';
import type { ResolvedMembership } from './membership.js';

/**
 * Which one of a stateful processor's instances is active: the member of the consumer group `<group>.lease`
 * that is assigned the single partition of the (empty) lease topic. Its state stores are whole, not split by
 * partition, so exactly one instance may write them; the others wait as standbys and one takes over when
 * the active stops or dies (after its session times out). A zombie that lost the lease while stuck is
 * fenced anyway: its consumer's group generation is stale, so the broker refuses its offsets (KIP-447).
 */
export class ProcessorLease {
  private consumer: KafkaConsumer | undefined;
  private held = false;
  private waiting: Array<() => void> = [];

  constructor(
    private readonly kafka: KafkaPort,
    readonly groupId: string,
    readonly topic: string,
    private readonly membership: ResolvedMembership,
    /** Called when the lease moves away from this instance (never while it is not held). */
    private readonly onLost: () => void,
  ) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** Joins the lease group; returns at once. `acquired` resolves once this instance holds the lease. */
  async join(): Promise<void> {
    this.consumer = this.kafka.consumer({
      groupId: this.groupId,
      fromBeginning: false,
      sessionTimeoutMs: this.membership.sessionTimeoutMs,
      heartbeatIntervalMs: this.membership.heartbeatIntervalMs,
      // The holder keeps the lease when a standby (re)joins: a restarted standby must not cost a failover.
      sticky: true,
      onAssignment: (assignment) => this.assigned(assignment.some((p) => p.topic === this.topic)),
    });
    await this.consumer.connect();
    await this.consumer.subscribe([this.topic]);
    // Nothing is ever written to the lease topic; consuming keeps the membership alive.
    await this.consumer.run({ eachBatch: async () => undefined });
  }

  acquired(): Promise<void> {
    if (this.held) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private assigned(holds: boolean): void {
    const had = this.held;
    this.held = holds;
    if (holds && !had) {
      for (const resolve of this.waiting.splice(0)) resolve();
    } else if (!holds && had) {
      this.onLost();
    }
  }

  async leave(): Promise<void> {
    this.held = false;
    await this.consumer?.disconnect();
    this.consumer = undefined;
  }
}
