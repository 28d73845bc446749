export {
  REPLAY_SOURCE_HEADER,
  replayIntoProcessor,
  replayIntoTopic,
  replayPrefix,
  type ProcessorReplayOptions,
  type ProcessorReplayProgress,
  type ProcessorReplayReport,
  type ReplayTarget,
  type TopicReplayOptions,
  type TopicReplayReport,
} from './replay.js';
