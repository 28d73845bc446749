import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FEATURE_NAMES, registerPolicyKind, policyKind, seededRandom } from '../policies/index.js';
import { ConfigError } from '../schemas/index.js';
import { clampEdits, failingRun, repairObservation } from '../test/fixtures/repair-observation.js';
import { MIN_REPLAY_TURNS, replayMove, replayTurns, TRACE_REPLAY_POLICY, TraceReplay, turnWaitsMs } from './trace-replay.js';
import type { Trace, TraceEpisode } from './trace.js';

const episode = (id: string, ...latencies: number[]): TraceEpisode => ({ id, turns: latencies.map((latencyMs) => ({ latencyMs, replyTokens: 5 })) });
const trace = (...episodes: TraceEpisode[]): Trace => ({ source: 'test', header: [], episodes });

test('an episode replays its own turns, at least four and at most the loop allows, waiting its latencies / speed', () => {
  const long = episode('long', 100, 200, 300, 400, 500, 600);
  assert.equal(replayTurns(long, 5), 5);
  assert.equal(replayTurns(episode('short', 100), 14), MIN_REPLAY_TURNS);
  assert.deepEqual(turnWaitsMs(long, 5), [100, 200, 300, 400, 500]);
  assert.deepEqual(turnWaitsMs(episode('short', 100, 300), 4, 2), [50, 150, 0, 0]);
});

test('the moves: run the tests, read the module, list the edits, the learned pick, submit', () => {
  const observation = { modulePath: 'm.py' };
  const names = (n: number): Array<string | null> => Array.from({ length: n }, (_, turn) => replayMove(turn, n, observation)?.action.name ?? null);
  assert.deepEqual(names(4), ['run_tests', 'list_edits', null, 'submit']);
  assert.deepEqual(names(6), ['run_tests', 'read_file', 'read_file', 'list_edits', null, 'submit']);
  assert.deepEqual(replayMove(1, 6, observation)?.action.arguments, { path: 'm.py' });
});

test('the replay kind: linear-repair parameters, episodes handed out in trace order from reset, the pick learned', async () => {
  const replay = new TraceReplay(trace(episode('a', 0, 0, 0, 0), episode('b', 0)));
  const kind = replay.kind();
  assert.equal(kind.policyId, TRACE_REPLAY_POLICY);
  const { params } = kind.initial();
  assert.equal(params.length, FEATURE_NAMES.length);
  const policy = await kind.load(params, 3);
  assert.equal(policy.version, 3);
  const actor = policy.startEpisode!({} as never);
  const random = seededRandom('r');
  const start = repairObservation({ maxTurns: 5 });
  assert.equal((await actor.act(start, random)).action.name, 'run_tests');
  const tested = { ...start, turn: 1, lastTests: failingRun, baselineTests: failingRun };
  assert.equal((await actor.act(tested, random)).action.name, 'list_edits');
  const pick = await actor.act({ ...tested, turn: 2, edits: clampEdits }, random);
  assert.equal(pick.action.name, 'apply_edit');
  assert.ok(pick.decision, 'the pick is a learned choice');
  assert.equal((await actor.act({ ...tested, turn: 3, edits: clampEdits, applied: clampEdits[0]! }, random)).action.name, 'submit');
  policy.startEpisode!({} as never);
  assert.equal(replay.handedOut, 2);
  replay.reset();
  assert.equal(replay.handedOut, 0);
  assert.equal(replay.takeEpisode().id, 'a');
  assert.throws(() => new TraceReplay(trace(episode('a', 1)), { speed: 0 }), RangeError);
});

test('a turn waits its recorded latency, and an abort ends the wait', async () => {
  const replay = new TraceReplay(trace(episode('slow', 60_000, 0, 0, 0)));
  const actor = (await replay.kind().load(replay.kind().initial().params, 0)).startEpisode!({} as never);
  const controller = new AbortController();
  const acting = actor.act(repairObservation({ maxTurns: 5 }), seededRandom('r'), controller.signal);
  controller.abort();
  await assert.rejects(acting);
});

test('a registered kind is found by id; an id taken is refused', () => {
  const kind = new TraceReplay(trace(episode('a', 1))).kind();
  registerPolicyKind(kind);
  assert.equal(policyKind(TRACE_REPLAY_POLICY), kind);
  assert.throws(() => registerPolicyKind(kind), (error: unknown) => error instanceof ConfigError && /already registered/.test(error.message));
  assert.throws(() => registerPolicyKind({ ...kind, policyId: 'linear-repair' }), ConfigError);
});
