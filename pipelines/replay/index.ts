export {
  REPLAY_SOURCE_HEADER,
  replayIntoProcessor,
  replayIntoTopic,
  replayPrefix,
  requireTopics,
  type ProcessorReplayOptions,
  type ProcessorReplayProgress,
  type ProcessorReplayReport,
  type ReplayTarget,
  type TopicReplayOptions,
  type TopicReplayReport,
} from './replay.js';
