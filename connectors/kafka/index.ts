export * from './port.js';
export * from './client.js';
export { DEFAULT_KAFKA_CLIENT, KAFKA_CLIENTS, resolveKafkaOptions, stderrKafkaLog, type KafkaLog, type KafkaLogLevel, type KafkaLogLine, type KafkaOptions, type ResolvedKafkaOptions } from './options.js';
export { catalogTopics, ensureTopics, requireTopics, type TopicSpec } from './topics.js';
export { fetchTopicEnds, groupLag, settledTopicOffsets, type TopicOffsets } from './offsets.js';
export { committedPastLastRecord, readTopic, type TableRecord, type TopicReader, type TopicReaderOptions } from './table.js';
export { checkRange, describePosition, parsePosition, rangeGroupId, readRange, type Position, type RangeBatch, type RangeRecord, type RangeReport, type ReadRangeOptions } from './range.js';
export { CLIENT_RECORD_CAP, recordBytes, recordLimit } from './record-size.js';
