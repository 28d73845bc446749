/**
 * The Kafka port: the small part of a Kafka client that trialrun uses, in our own types. Everything outside
 * connectors/kafka reaches Kafka through it; `kafkajs/` and `confluent/` implement it, and `createKafka`
 * picks one (KafkaOptions.client).
 */

export type KafkaClientName = 'kafkajs' | 'confluent';

/** A record to write. Keys and values are bytes or UTF-8 text; null is a tombstone / no key. */
export interface OutgoingMessage {
  readonly key?: Buffer | string | null;
  readonly value: Buffer | string | null;
  /** @default the client's partitioner (murmur2 of the key, as Java's, for both clients) */
  readonly partition?: number;
  readonly headers?: Readonly<Record<string, string | Buffer>>;
  /** Ms since the epoch as a string. @default now */
  readonly timestamp?: string;
}

export interface OutgoingRecords {
  readonly topic: string;
  readonly messages: readonly OutgoingMessage[];
}

/** A record as a consumer hands it over. */
export interface IncomingMessage {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly offset: string;
  /** Broker timestamp, ms since the epoch as a string. */
  readonly timestamp: string;
  /** Header values as UTF-8 text. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface PartitionOffset {
  readonly partition: number;
  readonly offset: string;
}

/** A group's committed position on one partition: the next offset to read, and the metadata committed with it. */
export interface CommittedOffset extends PartitionOffset {
  /** '-1' when the group has committed nothing there. */
  readonly offset: string;
  readonly metadata: string | null;
}

export interface TopicPartitionOffset extends PartitionOffset {
  readonly topic: string;
  /** Travels with the offset in the group's commit (≤ the broker's offset.metadata.max.bytes, 4 KiB). @default null */
  readonly metadata?: string | null;
}

export interface TopicWatermarks {
  readonly partition: number;
  /** Log start. */
  readonly low: string;
  /** Last stable offset (read_committed end). */
  readonly high: string;
}

export interface NewTopic {
  readonly topic: string;
  readonly partitions: number;
  /** @default 1 */
  readonly replicationFactor?: number;
  /** @default {} */
  readonly config?: Readonly<Record<string, string>>;
}

export interface KafkaAdmin {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  listTopics(): Promise<string[]>;
  /** Creates the topics and returns once each partition has a leader, so producers can write straight away. */
  createTopics(topics: readonly NewTopic[]): Promise<void>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** Log start and last stable offset of every partition. */
  fetchTopicOffsets(topic: string): Promise<TopicWatermarks[]>;
  /** Per partition, the first offset whose timestamp is at or after `timestamp`; the end (last stable offset) where there is none yet. */
  fetchTopicOffsetsByTimestamp(topic: string, timestamp: number): Promise<PartitionOffset[]>;
  /** Partition count and the asked-for settings (e.g. cleanup.policy) of a topic. */
  describeTopic(topic: string, configNames: readonly string[]): Promise<{ partitions: number; config: Record<string, string> }>;
  /** Brokers in the cluster (topics get three replicas where there are three). */
  brokerCount(): Promise<number>;
  /** Moves an idle group's committed offsets (the group must have no members). */
  setGroupOffsets(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /** Ids of every consumer group the cluster knows. */
  listGroups(): Promise<string[]>;
  /** Deletes idle groups and their committed offsets. */
  deleteGroups(groupIds: readonly string[]): Promise<void>;
  /**
   * The group's committed offsets (and their metadata) on the partitions of each existing topic; a partition
   * (or topic) where it committed nothing is either left out or given as '-1'.
   */
  fetchGroupOffsets(groupId: string, topics: readonly string[]): Promise<Array<{ topic: string; partitions: CommittedOffset[] }>>;
}

export interface ProducerOptions {
  /** Makes the producer transactional (`transaction()`); a later producer with the same id fences this one. @default none */
  readonly transactionalId?: string;
  /** The broker caps it at transaction.max.timeout.ms. @default 60000 */
  readonly transactionTimeoutMs?: number;
  /** Idempotent writes (no duplicates on retry, order kept); transactional producers always are. @default true */
  readonly idempotent?: boolean;
}

export interface KafkaProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /** Writes and waits for the acknowledgements. */
  send(records: OutgoingRecords): Promise<void>;
  sendBatch(batch: readonly OutgoingRecords[]): Promise<void>;
  /** Begins a transaction (transactional producers only); one at a time per producer. */
  transaction(): Promise<KafkaTransaction>;
}

export interface KafkaTransaction {
  send(records: OutgoingRecords): Promise<void>;
  sendBatch(batch: readonly OutgoingRecords[]): Promise<void>;
  /**
   * Commits `offsets` for `consumer`'s group in this transaction. Where the client supports it (KIP-447:
   * confluent), the commit carries the consumer's group generation, so a zombie that lost its partitions is
   * fenced by the broker whatever its transactional id; kafkajs sends the group id only.
   */
  sendOffsets(consumer: KafkaConsumer, offsets: readonly TopicPartitionOffset[]): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface ConsumerOptions {
  readonly groupId: string;
  /** How long the group waits for a silent member. @default 45000 */
  readonly sessionTimeoutMs?: number;
  /** @default 3000 */
  readonly heartbeatIntervalMs?: number;
  /**
   * The longest a batch handler may run before the member is deemed stuck and its partitions move on (the
   * confluent client's max.poll.interval.ms; kafkajs keeps a member as long as it heartbeats). @default 300000
   */
  readonly maxPollIntervalMs?: number;
  /** Read aborted and open transactions' records too. @default false (read_committed) */
  readonly readUncommitted?: boolean;
  /** Where a partition with no committed offset starts: the earliest record, else the end. @default true */
  readonly fromBeginning?: boolean;
  /**
   * Called on every (re)join of the group with the partitions now assigned; each restarts from its
   * committed offset, so whatever was read but not committed is read again. @default none
   */
  readonly onAssignment?: (assignment: ReadonlyArray<{ readonly topic: string; readonly partition: number }>) => void;
  /**
   * Keep partitions where they are when members join or leave (cooperative-sticky where the client has it;
   * kafkajs has no sticky assignor and keeps its round robin). @default false (the client's default assignor)
   */
  readonly sticky?: boolean;
}

export interface ConsumedBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly IncomingMessage[];
}

export interface BatchPayload {
  readonly batch: ConsumedBatch;
  /** Marks the partition done up to `offset` (inclusive): after a rebalance or a return, consumption resumes after it. */
  resolveOffset(offset: string): void;
  /** Keeps the membership alive during slow handling (a no-op where the client heartbeats by itself). */
  heartbeat(): Promise<void>;
  /** False once the consumer stops or the batch's partition was taken away: stop handling it. */
  isActive(): boolean;
}

export interface ConsumerRunOptions {
  readonly eachBatch: (payload: BatchPayload) => Promise<void>;
  /**
   * The consumer's position on a partition moved to `nextOffset`, past records and transaction markers
   * alike (markers never reach eachBatch): how a reader knows it reached an end offset. Reported only for
   * what eachBatch has been handed already. @default none
   */
  readonly onPosition?: (topic: string, partition: number, nextOffset: bigint) => void;
  /** The consumer failed for good and stopped. @default none (the failure is logged) */
  readonly onCrash?: (error: Error) => void;
}

export interface KafkaConsumer {
  readonly groupId: string;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  subscribe(topics: readonly string[]): Promise<void>;
  /** Starts consuming in the background; returns once running. */
  run(options: ConsumerRunOptions): Promise<void>;
  /** Moves an assigned partition's position (after run). */
  seek(topic: string, partition: number, offset: string): void;
  /** Commits offsets outside any transaction. */
  commitOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void>;
}

/** One Kafka client behind the port. */
export interface KafkaPort {
  readonly client: KafkaClientName;
  admin(): KafkaAdmin;
  producer(options?: ProducerOptions): KafkaProducer;
  consumer(options: ConsumerOptions): KafkaConsumer;
}
