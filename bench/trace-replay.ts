/**
 * The trace-replay policy of bench:loop (a simulation of remote-model episodes, bench-only): each episode replays
 * one recorded LLM episode of a trace (bench/trace.ts), waiting before each turn as long as the model took to
 * answer that turn, and acts with cheap scripted moves of the program-repair environment, so the episode's wall
 * time is the model's, not this machine's CPU:
 *
 *   turn 1           run_tests (one visible-test run: where the bug shows, which the edit chooser's features read);
 *   turns 2 .. n-3   read_file of the module (a file read in the sandbox, no test run);
 *   turn n-2         list_edits;
 *   turn n-1         apply_edit, chosen by the linear-repair policy (the one learned choice, so the learner
 *                    has samples with different rewards to train on and versions move, and staleness is real);
 *   turn n           submit.
 *
 * n is the replayed episode's turn count, at least 4 (the moves above) and at most the loop's maxTurns; a
 * replayed episode shorter than 4 turns waits nothing on its extra ones, one longer than maxTurns loses its last
 * turns' waits (bench:loop sets --max-turns to cover the trace). Episodes are handed out in the trace's
 * order, round and round, from `reset()`: each side of the benchmark replays the same episodes.
 *
 * Parameters, checkpoints and updates are linear-repair's; only the policy id differs, so the kind is registered
 * under its own id for the run (registerPolicyKind).
 */
import type { AnyEnvSpec, RepairObservation } from '../envs/index.js';
import { sleep } from '../pipelines/runtime/index.js';
import { linearRepairKind, type Action, type Policy, type PolicyKind } from '../policies/index.js';
import type { Trace, TraceEpisode } from './trace.js';

export const TRACE_REPLAY_POLICY = 'trace-replay';

export interface TraceReplayOptions {
  /**
   * Replayed waits are the recorded latencies divided by this (2 replays twice as fast); the shape of the tail
   * stays, the waits shrink against the local work. @default 1
   */
  readonly speed?: number;
}

/** The wait before each of an episode's `n` turns, in ms: its recorded latencies / speed, 0 past its recorded turns. */
export function turnWaitsMs(episode: TraceEpisode, n: number, speed = 1): number[] {
  return Array.from({ length: n }, (_, i) => (episode.turns[i]?.latencyMs ?? 0) / speed);
}

/** The fewest turns a replayed episode takes: run the tests, list the edits, apply one, submit. */
export const MIN_REPLAY_TURNS = 4;

/** Turns an episode of the trace takes in the loop: its own count, at least MIN_REPLAY_TURNS, at most maxTurns. */
export const replayTurns = (episode: TraceEpisode, maxTurns: number): number => Math.min(maxTurns, Math.max(MIN_REPLAY_TURNS, episode.turns.length));

/** The scripted move for turn `turn` (0-based) of `n`; null where the learned choice (apply_edit) goes. */
export function replayMove(turn: number, n: number, observation: Pick<RepairObservation, 'modulePath'>): Action | null {
  const call = (name: string, args: Record<string, unknown> = {}): Action => ({ action: { name, arguments: args }, decision: null });
  if (turn >= n - 1) return call('submit');
  if (turn === n - 2) return null;
  if (turn === n - 3) return call('list_edits');
  if (turn === 0) return call('run_tests');
  return call('read_file', { path: observation.modulePath });
}

export class TraceReplay {
  private next = 0;
  readonly speed: number;

  constructor(
    readonly trace: Trace,
    options: TraceReplayOptions = {},
  ) {
    this.speed = options.speed ?? 1;
    if (!(this.speed > 0 && Number.isFinite(this.speed))) throw new RangeError(`TraceReplayOptions.speed must be a number > 0, got ${options.speed}`);
  }

  /** Starts handing out episodes from the trace's first again. */
  reset(): void {
    this.next = 0;
  }

  /** Episodes handed out since the last reset. */
  get handedOut(): number {
    return this.next;
  }

  takeEpisode(): TraceEpisode {
    return this.trace.episodes[this.next++ % this.trace.episodes.length]!;
  }

  /** The policy kind: linear-repair's parameters and update, the replaying actor. */
  kind(): PolicyKind<RepairObservation, number[], unknown> {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const replay = this;
    return {
      ...linearRepairKind,
      policyId: TRACE_REPLAY_POLICY,
      // Only the last choice of an episode is learned here, so nothing earlier needs crediting as failed.
      earlierDecisionsFailed: false,
      async load(params, version, options) {
        const chooser = await linearRepairKind.load(params, version, options);
        return new ReplayPolicy(replay, chooser, version);
      },
    } as PolicyKind<RepairObservation, number[], unknown>;
  }
}

class ReplayPolicy implements Policy<RepairObservation> {
  readonly policyId = TRACE_REPLAY_POLICY;

  constructor(
    private readonly replay: TraceReplay,
    private readonly chooser: Policy<RepairObservation>,
    readonly version: number,
    private readonly episode: TraceEpisode | null = null,
  ) {}

  startEpisode(_env: AnyEnvSpec): Policy<RepairObservation> {
    return new ReplayPolicy(this.replay, this.chooser, this.version, this.replay.takeEpisode());
  }

  async act(observation: RepairObservation, random: () => number, signal?: AbortSignal): Promise<Action> {
    const episode = this.episode ?? this.replay.takeEpisode();
    const n = replayTurns(episode, observation.maxTurns);
    const turn = observation.turn;
    const wait = turnWaitsMs(episode, n, this.replay.speed)[turn] ?? 0;
    if (wait > 0) await sleep(wait, signal ?? new AbortController().signal);
    const move = replayMove(turn, n, observation);
    if (move) return move;
    // The linear-repair script, with the tests run, the edits listed and none applied, chooses an edit to apply
    // (or submits, if the visible tests already pass).
    return this.chooser.act(observation, random, signal);
  }
}
