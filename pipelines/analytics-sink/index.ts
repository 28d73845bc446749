export { AnalyticsSink, type AnalyticsSinkOptions, type SinkStageTimes } from './sink.js';
