/**
 * Metrics, one file per concern: the registry and its Prometheus text exposition (registry.ts), the
 * `trialrun_processor_*` families every stream processor reports into with its middlewares (processor.ts), and
 * the sandbox pool's gauges read at scrape time (sandbox-pool.ts).
 */
export { Counter, defaultRegistry, Family, Gauge, Histogram, MetricsRegistry, type Collector, type HistogramState, type Labels } from './registry.js';
export { countRetries, LATENCY_BUCKETS_SECONDS, metrics, ProcessorMetrics, type ProcessorLabels } from './processor.js';
export { observeSandboxPool, type ObservablePool } from './sandbox-pool.js';
