export * from './client.js';
export { catalogTopics, ensureTopics, requireTopics, type TopicSpec } from './topics.js';
export { settledTopicOffsets, type TopicOffsets } from './offsets.js';
export { readTopic, type TableRecord, type TopicReader, type TopicReaderOptions } from './table.js';
export { checkRange, describePosition, parsePosition, rangeGroupId, readRange, type Position, type RangeBatch, type RangeRecord, type RangeReport, type ReadRangeOptions } from './range.js';
