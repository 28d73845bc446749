export { AnalyticsSink, type AnalyticsSinkOptions } from './sink.js';
