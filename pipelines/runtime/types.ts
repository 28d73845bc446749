import type { TopicKey, TopicValue } from '../../schemas/index.js';

interface RecordMeta {
  /** Physical topic name. */
  readonly topic: string;
  /** Catalog entry the topic belongs to. */
  readonly topicKey: TopicKey;
  readonly partition: number;
  readonly offset: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Broker timestamp, ms since the epoch as a string (as Kafka clients report it). */
  readonly timestamp: string;
}

/** A topic partition as one map key. */
export const partitionKey = (topic: string, partition: number): string => `${topic}:${partition}`;

/** A record as it came off the wire. */
export interface RawRecord extends RecordMeta {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

/** A decoded, contract-checked record; `topicKey` tells which variant `value` is. */
export type TypedRecord<K extends TopicKey = TopicKey> = {
  [P in K]: RecordMeta & { readonly topicKey: P; readonly key: string | null; readonly value: TopicValue<P> };
}[K];

/** Says whether a processor is for a record (see ProcessorOptions.accept). */
export type Accept<K extends TopicKey = TopicKey> = (record: TypedRecord<K>) => boolean;

/** The small payload every handler gets. */
export interface Payload<R> {
  readonly record: R;
  /** Aborted on shutdown or when the timeout middleware gives up; pass it to anything slow. */
  readonly signal: AbortSignal;
}

/** A record a handler wants written, in the same transaction as its input's offset. */
export type Output = { [K in TopicKey]: { readonly topic: K; readonly key: string; readonly value: TopicValue<K> } }[TopicKey];

export interface EncodedOutput {
  readonly topic: string;
  readonly key: string;
  readonly value: Buffer | null;
}

export type Handler<R, O> = (payload: Payload<R>) => Promise<readonly O[]>;

/** What the runtime drives: raw bytes in, encoded records out. Cross-cutting concerns wrap this shape. */
export type RawHandler = Handler<RawRecord, EncodedOutput>;

export type Middleware = (next: RawHandler) => RawHandler;

/** Applies middleware so that the first in the list is the outermost. */
export function compose(handler: RawHandler, ...middleware: readonly Middleware[]): RawHandler {
  return middleware.reduceRight((next, wrap) => wrap(next), handler);
}
