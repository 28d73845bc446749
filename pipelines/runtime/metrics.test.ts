import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConnectionError } from '../../schemas/index.js';
import { parsePrometheusText, sampleValue } from '../../test/fixtures/prometheus.js';
import { countRetries, metrics, MetricsRegistry, observeSandboxPool, ProcessorMetrics } from './metrics/index.js';
import { retry } from './retry.js';
import { compose, type RawHandler, type RawRecord } from './types.js';

const record: RawRecord = { topic: 't', topicKey: 'tasks', partition: 0, offset: '7', key: null, value: null, headers: {}, timestamp: '0' };
const payload = () => ({ record, signal: new AbortController().signal });

test('the exposition parses, with help and label values escaped, and histograms cumulative', () => {
  const registry = new MetricsRegistry();
  const counter = registry.counter('things_total', 'Things\\seen\nper line', ['kind']);
  counter.inc({ kind: 'a "quoted"\nvalue\\' }, 2);
  counter.inc({ kind: 'plain' });
  registry.gauge('level', 'A level').set({}, -1.5);
  const histogram = registry.histogram('wait_seconds', 'Waits', ['stage'], [0.1, 1, 10]);
  for (const value of [0.05, 0.5, 0.5, 5, 50]) histogram.observe({ stage: 'x' }, value);

  const families = parsePrometheusText(registry.expose());
  assert.equal(families.get('things_total')?.type, 'counter');
  assert.equal(families.get('things_total')?.help, 'Things\\seen\nper line');
  assert.equal(sampleValue(families, 'things_total', { kind: 'a "quoted"\nvalue\\' }), 2);
  assert.equal(sampleValue(families, 'things_total', { kind: 'plain' }), 1);
  assert.equal(sampleValue(families, 'level'), -1.5);
  assert.deepEqual(
    families.get('wait_seconds')!.samples.filter((s) => s.name === 'wait_seconds_bucket').map((s) => [s.labels.le, s.value]),
    [['0.1', 1], ['1', 3], ['10', 4], ['+Inf', 5]],
  );
  assert.equal(sampleValue(families, 'wait_seconds_count', { stage: 'x' }), 5);
  assert.equal(sampleValue(families, 'wait_seconds_sum', { stage: 'x' }), 56.05);
});

test('a family is written once: asking again returns it, another shape is refused', () => {
  const registry = new MetricsRegistry();
  const first = registry.counter('records_total', 'Records', ['processor']);
  assert.equal(registry.counter('records_total', 'Records', ['processor']), first);
  assert.throws(() => registry.gauge('records_total', 'Records', ['processor']), /exists as a counter/);
  assert.throws(() => registry.counter('records_total', 'Records', ['other']), /exists as a counter with labels \{processor\}/);
  assert.throws(() => registry.histogram('h', 'H', [], [1, 1]), /strictly increasing/);
  assert.throws(() => registry.counter('bad-name', 'x'), /must match/);
  assert.throws(() => registry.counter('x_total', 'x', ['__reserved']), /label name "__reserved"/);
  assert.throws(() => first.inc({ processor: 'a' }, -1), /can only go up/);
  assert.throws(() => first.inc({ wrong: 'a' }), /takes labels \{processor\}, got \{wrong\}/);
});

test('processor metrics report records, outputs, dead letters, retries, in-flight and latency under their labels', async () => {
  const registry = new MetricsRegistry();
  const into = new ProcessorMetrics({ processor: 'verifier', instance: '1' }, registry);
  let calls = 0;
  let inFlightSeen = -1;
  const handler: RawHandler = async () => {
    inFlightSeen = into.inFlight;
    if (++calls < 3) throw new ConnectionError('broker away');
    return [{ topic: 'out', key: 'k', value: null }, { topic: 'out', key: 'k2', value: null }];
  };
  const chain = compose(handler, metrics(into), retry({ retries: 3, initialDelayMs: 1, maxDelayMs: 2 }), countRetries(into));
  await chain(payload());
  into.deadLettered++;
  into.skipped++;
  assert.equal(inFlightSeen, 1, 'in flight while handled');

  const labels = { processor: 'verifier', instance: '1' };
  const families = parsePrometheusText(registry.expose());
  assert.equal(sampleValue(families, 'trialrun_processor_records_in_total', labels), 1);
  assert.equal(sampleValue(families, 'trialrun_processor_records_out_total', labels), 2);
  assert.equal(sampleValue(families, 'trialrun_processor_retries_total', labels), 2);
  assert.equal(sampleValue(families, 'trialrun_processor_dead_letters_total', labels), 1);
  assert.equal(sampleValue(families, 'trialrun_processor_records_skipped_total', labels), 1);
  assert.equal(sampleValue(families, 'trialrun_processor_in_flight', labels), 0);
  assert.equal(sampleValue(families, 'trialrun_processor_latency_seconds_count', labels), 1);
  assert.equal(into.retries, 2);
  assert.equal(into.handled, 0, 'the one record was skipped, as counted');

  const failing = compose(async () => Promise.reject(new Error('boom')), metrics(into));
  await assert.rejects(failing(payload()), /boom/);
  assert.equal(sampleValue(parsePrometheusText(registry.expose()), 'trialrun_processor_errors_total', labels), 1);
});

test('metrics without labels count for their owner only', () => {
  const registry = new MetricsRegistry();
  const local = new ProcessorMetrics(undefined, registry);
  local.record(1, 1);
  assert.equal(local.processed, 1);
  assert.equal(registry.expose(), '\n');
});

test('a sandbox pool is read at scrape time, until it is unobserved', () => {
  const registry = new MetricsRegistry();
  const pool = { stats: { held: 2, ready: 1, creating: 0, pending: 3 }, reapedCount: 4 };
  const stop = observeSandboxPool(pool, 'docker', registry);
  let families = parsePrometheusText(registry.expose());
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_sandboxes', { pool: 'docker', state: 'busy' }), 2);
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_sandboxes', { pool: 'docker', state: 'idle' }), 1);
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_sandboxes', { pool: 'docker', state: 'destroying' }), 3);
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_reaped_total', { pool: 'docker' }), 4);
  pool.stats.held = 0;
  pool.reapedCount = 6;
  families = parsePrometheusText(registry.expose());
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_sandboxes', { pool: 'docker', state: 'busy' }), 0);
  assert.equal(sampleValue(families, 'trialrun_sandbox_pool_reaped_total', { pool: 'docker' }), 6);
  stop();
  pool.stats.held = 9;
  assert.equal(sampleValue(parsePrometheusText(registry.expose()), 'trialrun_sandbox_pool_sandboxes', { pool: 'docker', state: 'busy' }), 0, 'no longer read');
});

test('the reader refuses malformed expositions', () => {
  assert.throws(() => parsePrometheusText('x 1\n'), /no TYPE line/);
  assert.throws(() => parsePrometheusText('# TYPE x counter\nx{a="1} 1\n'), /unterminated/);
  assert.throws(() => parsePrometheusText('# TYPE x counter\nx one\n'), /not a sample value/);
  assert.throws(() => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 1\n'), /not cumulative/);
  assert.throws(() => parsePrometheusText('# TYPE x gauge\nx 1'), /end with a newline/);
});
