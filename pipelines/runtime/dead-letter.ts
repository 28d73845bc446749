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
import type { Middleware, RawRecord } from './types.js';

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
 * Turns a record that failed for good into a dead letter, written in the same transaction as the
 * input's offset, so the poison record is neither lost nor blocking. Shutdown and an unavailable host are not
 * failures of the record: they propagate and the transaction is aborted, so the record is processed again.
 */
export function deadLetter(processor: string, serde: TopicSerde, names: TopicNames, onDeadLetter?: (letter: DeadLetter) => void): Middleware {
  return (next) => async (payload) => {
    try {
      return await next(payload);
    } catch (error) {
      // Neither is the record's fault: the transaction is aborted and the record redone (here or by another member).
      if (error instanceof ShutdownError || error instanceof HostUnavailableError || payload.signal.aborted) throw error;
      const letter = toDeadLetter(processor, payload.record, error);
      onDeadLetter?.(letter);
      return [{ topic: names.name('deadLetters'), key: payload.record.topic, value: await serde.encode('deadLetters', letter) }];
    }
  };
}
