import type { TopicSerde } from '../../connectors/registry/index.js';
import {
  attemptsOf,
  DecodeError,
  HostUnavailableError,
  ShutdownError,
  ValidationError,
  errorMessage,
  isRetriable,
  nowIso,
  type DeadLetter,
  type TopicNames,
} from '../../schemas/index.js';
import { recordBytes } from '../../connectors/kafka/index.js';
import type { RecordLimits } from './record-limits.js';
import type { EncodedOutput, Middleware, RawRecord } from './types.js';

function stageOf(error: unknown): DeadLetter['error']['stage'] {
  if (error instanceof DecodeError) return 'decode';
  if (error instanceof ValidationError) return 'validate';
  return 'handle';
}

export function toDeadLetter(processor: string, record: RawRecord, error: unknown): DeadLetter {
  return {
    processor,
    sourceTopic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key?.toString('base64') ?? null,
    value: record.value?.toString('base64') ?? null,
    headers: { ...record.headers },
    error: {
      name: error instanceof Error ? error.name : 'Error',
      message: errorMessage(error),
      retriable: isRetriable(error),
      stage: stageOf(error),
    },
    attempts: attemptsOf(error),
    failedAt: nowIso(),
  };
}

/**
 * The dead letter of `record` as the bytes to write. A letter above the dead-letter topic's limit (an input near its
 * own topic's limit grows by a third in base64) leaves the input's value and headers out and says where they are:
 * the input stays in its topic at the partition and offset the letter names.
 */
export async function encodeDeadLetter(processor: string, serde: TopicSerde, names: TopicNames, record: RawRecord, error: unknown, limits?: RecordLimits): Promise<{ letter: DeadLetter; output: EncodedOutput }> {
  const topic = names.name('deadLetters');
  const letter = toDeadLetter(processor, record, error);
  const output = { topic, key: record.topic, value: await serde.encode('deadLetters', letter) };
  if (!limits) return { letter, output };
  const limit = await limits.limitOf(topic);
  if (recordBytes(output) <= limit) return { letter, output };
  const size = record.value?.length ?? 0;
  const slim: DeadLetter = {
    ...letter,
    value: null,
    headers: {},
    error: { ...letter.error, message: `${letter.error.message.slice(0, 2000)} [the input's value (${size} bytes) and headers are left out of this letter, above the ${limit} bytes ${topic} takes: read them at ${record.topic}[${record.partition}]@${record.offset}]` },
  };
  return { letter: slim, output: { topic, key: record.topic, value: await serde.encode('deadLetters', slim) } };
}

/**
 * Turns a record that failed for good into a dead letter, written in the same transaction as the
 * input's offset, so the poison record is neither lost nor blocking. Shutdown and an unavailable host are not
 * failures of the record: they propagate and the transaction is aborted, so the record is processed again.
 */
export function deadLetter(processor: string, serde: TopicSerde, names: TopicNames, onDeadLetter?: (letter: DeadLetter) => void, limits?: RecordLimits): Middleware {
  return (next) => async (payload) => {
    try {
      return await next(payload);
    } catch (error) {
      // Neither is the record's fault: the transaction is aborted and the record redone (here or by another member).
      if (error instanceof ShutdownError || error instanceof HostUnavailableError || payload.signal.aborted) throw error;
      const { letter, output } = await encodeDeadLetter(processor, serde, names, payload.record, error, limits);
      onDeadLetter?.(letter);
      return [output];
    }
  };
}
