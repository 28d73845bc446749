export { typed } from './codec.js';
export { deadLetter, toDeadLetter } from './dead-letter.js';
export { GlobalTable } from './global-table.js';
export { metrics, ProcessorMetrics } from './metrics.js';
export { StreamProcessor, type ProcessorContext, type ProcessorOptions } from './processor.js';
export { attemptsOf, backoffDelay, resolveRetryOptions, retry, sleep, type RetryOptions } from './retry.js';
export { StateStore } from './state-store.js';
export { timeout } from './timeout.js';
export * from './types.js';
