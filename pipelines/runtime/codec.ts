import type { TopicSerde } from '../../connectors/registry/index.js';
import type { TopicKey, TopicNames } from '../../schemas/index.js';
import type { EncodedOutput, Handler, Output, RawHandler, TypedRecord } from './types.js';

/**
 * The boundary: decodes each input with the registry and checks it against its zod contract before the
 * handler sees it, then checks and encodes whatever the handler emits. Failures throw DecodeError or
 * ValidationError, which the dead-letter middleware turns into dead letters.
 */
export function typed<K extends TopicKey>(serde: TopicSerde, names: TopicNames, handler: Handler<TypedRecord<K>, Output>): RawHandler {
  return async ({ record, signal }) => {
    const value = await serde.decode(record.topicKey, record.value);
    const decoded = { ...record, key: record.key?.toString('utf8') ?? null, value } as TypedRecord<K>;
    const outputs = await handler({ record: decoded, signal });
    return Promise.all(
      outputs.map(async (output): Promise<EncodedOutput> => ({
        topic: names.name(output.topic),
        key: output.key,
        value: await serde.encode(output.topic, output.value),
      })),
    );
  };
}
