import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { episodeWaitS, formatTrace, loadTrace, parseTrace, perfectSchedulerRate, readStoreTrace, replayedEpisodes, synchronousModelRate, traceShape, type TraceEpisode } from './trace.js';

const episode = (id: string, ...latencies: number[]): TraceEpisode => ({ id, turns: latencies.map((latencyMs) => ({ latencyMs, replyTokens: 10 })) });

test('a trace file: header lines, one episode a line, read back as written', () => {
  const text = '# recorded by hand\n# second line\n{"id":"a","turns":[[1200,30],[800,12]]}\n\n{"turns":[[5000,96]]}\n';
  const trace = parseTrace(text, 't.jsonl');
  assert.deepEqual(trace.header, ['recorded by hand', 'second line']);
  assert.equal(trace.episodes.length, 2);
  assert.deepEqual(trace.episodes[0], { id: 'a', turns: [{ latencyMs: 1200, replyTokens: 30 }, { latencyMs: 800, replyTokens: 12 }] });
  assert.equal(trace.episodes[1]!.id, 't.jsonl:5', 'an episode without an id is named by its line');
  const again = parseTrace(formatTrace(trace), 'again');
  assert.deepEqual(again.header, trace.header);
  assert.deepEqual(again.episodes[0], trace.episodes[0]);
  assert.deepEqual(again.episodes[1]!.turns, trace.episodes[1]!.turns);
});

test('a bad trace line is a ConfigError naming the file and line', () => {
  const bad = (text: string, pattern: RegExp): void => assert.throws(() => parseTrace(text, 'f'), (error: unknown) => error instanceof ConfigError && pattern.test(error.message));
  bad('{"turns":[[1,2]]}\nnot json\n', /^f line 2: not JSON/);
  bad('{"turns":[]}\n', /f line 1: an episode needs "turns"/);
  bad('{"turns":[[-1,2]]}\n', /f line 1: turn 0 must be \[latencyMs, replyTokens\]/);
  bad('{"turns":[[1,2,3]]}\n', /turn 0 must be/);
  bad('{"turns":[[1,"x"]]}\n', /turn 0 must be/);
  bad('# only a header\n', /f: the trace has no episodes/);
});

test('loadTrace reads a file, and refuses a missing one or a store without llm episodes with a ConfigError', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-trace-test-'));
  const file = join(dir, 't.jsonl');
  writeFileSync(file, '{"turns":[[100,1]]}\n');
  assert.equal((await loadTrace(file, dir)).episodes.length, 1);
  await assert.rejects(loadTrace(join(dir, 'missing.jsonl'), dir), (error: unknown) => error instanceof ConfigError && /cannot read it/.test(error.message));
  await assert.rejects(readStoreTrace(join(dir, 'empty-store')), (error: unknown) => error instanceof ConfigError && /--trace store/.test(error.message));
  await assert.rejects(loadTrace(`store:${join(dir, 'empty-store')}`, dir), (error: unknown) => error instanceof ConfigError);
});

test('the shape of a trace: model time per episode, its tail, replay order round and round', () => {
  const trace = { episodes: [episode('a', 1000, 1000), episode('b', 2000), episode('c', 9000, 3000)] };
  assert.equal(episodeWaitS(trace.episodes[2]!), 12);
  const shape = traceShape(trace);
  assert.equal(shape.episodes, 3);
  assert.equal(shape.waitS.mean, (2 + 2 + 12) / 3);
  assert.equal(shape.waitS.max, 12);
  assert.equal(shape.tail, 12 / shape.waitS.mean);
  assert.equal(shape.turns.max, 2);
  assert.deepEqual(replayedEpisodes(trace, 5).map((e) => e.id), ['a', 'b', 'c', 'a', 'b']);
});

test('the perfect-scheduler bound: the pool over the work of a sample, or the episode slots over an episode, whichever is less', () => {
  // 12 sandboxes, 10 s of model time, 1 s of tools, 1 s of verification: 12 / 12 = 1 sample/s.
  assert.equal(perfectSchedulerRate({ sandboxes: 12, episodeSlots: 48, waitS: 10, toolS: 1, verifyS: 1 }), 1);
  // Only 6 episode slots: 6 / 11 samples/s, below the pool's 1.
  assert.equal(perfectSchedulerRate({ sandboxes: 12, episodeSlots: 6, waitS: 10, toolS: 1, verifyS: 1 }), 6 / 11);
  // The trace alone (tools and verification free).
  assert.equal(perfectSchedulerRate({ sandboxes: 16, episodeSlots: 48, waitS: 8, toolS: 0, verifyS: 0 }), 2);
  assert.throws(() => perfectSchedulerRate({ sandboxes: 0, episodeSlots: 1, waitS: 1, toolS: 0, verifyS: 0 }), ConfigError);
  assert.throws(() => perfectSchedulerRate({ sandboxes: 1, episodeSlots: 1, waitS: Number.NaN, toolS: 0, verifyS: 0 }), /waitS/);
  assert.throws(() => perfectSchedulerRate({ sandboxes: 1, episodeSlots: 1, waitS: 0, toolS: 0, verifyS: 0 }), /no bound/);
});

test('the idealised synchronous loop waits on each batch slowest, so a long tail costs it what the bound does not', () => {
  // Batches of 4 on 4 sandboxes: one batch of 1 s, 1 s, 1 s, 9 s takes 9 s; 4 samples / 9 s.
  const tailed = [episode('a', 1000), episode('b', 1000), episode('c', 1000), episode('d', 9000)];
  assert.equal(synchronousModelRate(tailed, 4, 4), 4 / 9);
  // The bound on the same work: 4 sandboxes / 3 s mean = 4/3 samples/s, 3x the synchronous loop.
  assert.equal(perfectSchedulerRate({ sandboxes: 4, episodeSlots: 4, waitS: 3, toolS: 0, verifyS: 0 }) / synchronousModelRate(tailed, 4, 4), 3);
  // Equal episodes: nothing to lose; a batch larger than the pool runs in waves (greedy), per-sample work added.
  const even = [episode('a', 2000), episode('b', 2000), episode('c', 2000), episode('d', 2000)];
  assert.equal(synchronousModelRate(even, 4, 2, 1), 4 / 6);
  assert.throws(() => synchronousModelRate(even, 0, 2), ConfigError);
  assert.throws(() => synchronousModelRate([], 4, 2), /no episodes/);
});
