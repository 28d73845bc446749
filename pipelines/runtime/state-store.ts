import type { KafkaPort } from '../../connectors/kafka/index.js';
import { readTopic } from '../../connectors/kafka/index.js';
import type { EncodedOutput } from './types.js';

/**
 * A key-value store whose every change is written to a compacted changelog topic in the same
 * transaction as the outputs and offsets of the records that caused it, so after a crash the store is
 * restored to exactly the state that matches the committed offsets (exactly-once state).
 * Writes are staged until the runtime commits the transaction; a processor with stores runs as one
 * instance (the store is not split by input partition).
 */
export class StateStore<V> {
  private readonly committed = new Map<string, V>();
  private readonly staged = new Map<string, V | undefined>();

  constructor(
    readonly name: string,
    readonly changelogTopic: string,
  ) {}

  get(key: string): V | undefined {
    return this.staged.has(key) ? this.staged.get(key) : this.committed.get(key);
  }

  put(key: string, value: V): void {
    this.staged.set(key, value);
  }

  delete(key: string): void {
    this.staged.set(key, undefined);
  }

  /** Current view, staged writes included. */
  entries(): Array<[string, V]> {
    const view = new Map(this.committed);
    for (const [key, value] of this.staged) {
      if (value === undefined) view.delete(key);
      else view.set(key, value);
    }
    return [...view];
  }

  get size(): number {
    return this.entries().length;
  }

  /** The changelog records for the staged writes (a null value deletes the key). */
  changelog(): EncodedOutput[] {
    return [...this.staged].map(([key, value]) => ({
      topic: this.changelogTopic,
      key,
      value: value === undefined ? null : Buffer.from(JSON.stringify(value)),
    }));
  }

  commit(): void {
    for (const [key, value] of this.staged) {
      if (value === undefined) this.committed.delete(key);
      else this.committed.set(key, value);
    }
    this.staged.clear();
  }

  discard(): void {
    this.staged.clear();
  }

  async restore(kafka: KafkaPort): Promise<number> {
    this.committed.clear();
    this.staged.clear();
    await readTopic(kafka, {
      topic: this.changelogTopic,
      onRecord: ({ key, value }) => {
        if (key === null) return;
        if (value === null) this.committed.delete(key);
        else this.committed.set(key, JSON.parse(value.toString('utf8')) as V);
      },
    });
    return this.committed.size;
  }
}
