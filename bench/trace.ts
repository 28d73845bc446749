/**
 * Traces of recorded LLM episodes for the scheduling benchmark (bench:loop --trace): per episode, per model turn,
 * how long the model took to answer and how long its reply was. The replay policy (bench/trace-replay.ts) turns
 * them into waits, so that a benchmark episode spends its time as a remote-model episode does (waiting on a
 * server, not on this machine's CPU), with the long tail real agent episodes have.
 *
 * A trace file is JSON Lines: `#` lines are its header (where it came from, how it was recorded), every other line
 * one episode, `{"id": "...", "turns": [[latencyMs, replyTokens], ...]}`. `readStoreTrace` reads the same from the
 * analytics store (the trajectories table's `llm_turns`, docs/analytics.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { AnalyticsCatalog } from '../connectors/analytics/index.js';
import { ConfigError } from '../schemas/index.js';

export interface TraceTurn {
  /** The model request's wall time, as the policy recorded it (`Step.llm.latencyMs`). */
  readonly latencyMs: number;
  /** Completion tokens of the reply. */
  readonly replyTokens: number;
}

export interface TraceEpisode {
  readonly id: string;
  readonly turns: readonly TraceTurn[];
}

export interface Trace {
  /** Where it was read from: a file path, or `store:<data dir>`. */
  readonly source: string;
  /** The file's `#` lines, without the `#`. */
  readonly header: readonly string[];
  readonly episodes: readonly TraceEpisode[];
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** Parses a trace file's text; a bad line is a ConfigError naming the source and line. */
export function parseTrace(text: string, source: string): Trace {
  const header: string[] = [];
  const episodes: TraceEpisode[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      header.push(line.slice(1).trim());
      continue;
    }
    const where = `${source} line ${i + 1}`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new ConfigError(`${where}: not JSON`);
    }
    const { id, turns } = (parsed ?? {}) as { id?: unknown; turns?: unknown };
    if (!Array.isArray(turns) || turns.length === 0) throw new ConfigError(`${where}: an episode needs "turns", a non-empty list of [latencyMs, replyTokens]`);
    episodes.push({
      id: typeof id === 'string' && id !== '' ? id : `${source}:${i + 1}`,
      turns: turns.map((turn: unknown, t) => {
        if (!Array.isArray(turn) || turn.length !== 2 || !isCount(turn[0]) || !isCount(turn[1])) throw new ConfigError(`${where}: turn ${t} must be [latencyMs, replyTokens], two numbers >= 0, got ${JSON.stringify(turn)}`);
        return { latencyMs: turn[0], replyTokens: turn[1] };
      }),
    });
  }
  if (episodes.length === 0) throw new ConfigError(`${source}: the trace has no episodes`);
  return { source, header, episodes };
}

/** The file text of a trace: its header lines, then one episode a line (what parseTrace reads back). */
export function formatTrace(trace: Pick<Trace, 'header' | 'episodes'>): string {
  const header = trace.header.map((line) => `# ${line}`.trimEnd());
  const body = trace.episodes.map((episode) => JSON.stringify({ id: episode.id, turns: episode.turns.map((turn) => [Math.round(turn.latencyMs), turn.replyTokens]) }));
  return `${[...header, ...body].join('\n')}\n`;
}

export const writeTrace = (path: string, trace: Pick<Trace, 'header' | 'episodes'>): void => writeFileSync(path, formatTrace(trace));

/**
 * The model turns of every llm episode in the analytics store under `dataDir`, in step order: one trace episode per
 * trajectory that has any. Episodes whose turns lack a latency (none recorded) are left out. A store without
 * such episodes is a ConfigError (a fresh machine has none: record one, or use the committed trace file).
 */
export async function readStoreTrace(dataDir: string): Promise<Trace> {
  let catalog: AnalyticsCatalog;
  try {
    catalog = await AnalyticsCatalog.open(dataDir);
  } catch (error) {
    throw new ConfigError(`--trace store: no analytics store to read under ${dataDir} (${error instanceof Error ? error.message : String(error)}); give a trace file instead (bench/traces/)`);
  }
  try {
    let rows: ReadonlyArray<readonly unknown[]>;
    try {
      ({ rows } = await catalog.query(
        `SELECT trajectory_id, t.step_index, t.latency_ms, t.completion_tokens
         FROM (SELECT trajectory_id, unnest(llm_turns) AS t FROM trajectories WHERE len(llm_turns) > 0)
         ORDER BY trajectory_id, t.step_index`,
      ));
    } catch (error) {
      throw new ConfigError(`--trace store: the analytics store under ${dataDir} has no trajectories to read (${error instanceof Error ? error.message : String(error)})`);
    }
    const byEpisode = new Map<string, TraceTurn[]>();
    const incomplete = new Set<string>();
    for (const [id, , latency, tokens] of rows) {
      const key = String(id);
      if (latency === null || latency === undefined) incomplete.add(key);
      const turns = byEpisode.get(key) ?? [];
      turns.push({ latencyMs: Number(latency ?? 0), replyTokens: Number(tokens ?? 0) });
      byEpisode.set(key, turns);
    }
    const episodes = [...byEpisode].filter(([id]) => !incomplete.has(id)).map(([id, turns]) => ({ id, turns }));
    if (episodes.length === 0) throw new ConfigError(`--trace store: the analytics store under ${dataDir} has no llm episodes with recorded turn latencies`);
    return { source: `store:${dataDir}`, header: [`read from the analytics store under ${dataDir}: trajectories.llm_turns (latency_ms, completion_tokens)`], episodes };
  } finally {
    catalog.close();
  }
}

/** `--trace <file>`, `--trace store` (the default data dir) or `--trace store:<data dir>`. */
export async function loadTrace(spec: string, defaultDataDir: string): Promise<Trace> {
  if (spec === 'store') return readStoreTrace(defaultDataDir);
  if (spec.startsWith('store:')) return readStoreTrace(spec.slice('store:'.length));
  let text: string;
  try {
    text = readFileSync(spec, 'utf8');
  } catch (error) {
    throw new ConfigError(`--trace ${spec}: cannot read it (${error instanceof Error ? error.message : String(error)})`);
  }
  return parseTrace(text, spec);
}

/** An episode's model time: the sum of its turns' latencies, in seconds. */
export const episodeWaitS = (episode: TraceEpisode): number => episode.turns.reduce((sum, turn) => sum + turn.latencyMs, 0) / 1000;

/** The episodes a run of `samples` episodes replays: the trace's, in order, round and round (replay assigns them so). */
export function replayedEpisodes(trace: Pick<Trace, 'episodes'>, samples: number): TraceEpisode[] {
  return Array.from({ length: samples }, (_, i) => trace.episodes[i % trace.episodes.length]!);
}

export interface TraceShape {
  readonly episodes: number;
  readonly turns: { readonly mean: number; readonly max: number };
  /** Per-episode model time in seconds. */
  readonly waitS: { readonly mean: number; readonly p50: number; readonly p90: number; readonly max: number };
  /** Max over mean: how heavy the tail is (1 for equal episodes). */
  readonly tail: number;
  readonly replyTokens: { readonly mean: number };
}

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export function traceShape(trace: Pick<Trace, 'episodes'>): TraceShape {
  const waits = trace.episodes.map(episodeWaitS).sort((a, b) => a - b);
  const mean = waits.reduce((a, b) => a + b, 0) / waits.length;
  const turns = trace.episodes.map((e) => e.turns.length);
  const replies = trace.episodes.flatMap((e) => e.turns.map((t) => t.replyTokens));
  return {
    episodes: waits.length,
    turns: { mean: turns.reduce((a, b) => a + b, 0) / turns.length, max: Math.max(...turns) },
    waitS: { mean, p50: quantile(waits, 0.5), p90: quantile(waits, 0.9), max: waits.at(-1)! },
    tail: mean > 0 ? waits.at(-1)! / mean : 1,
    replyTokens: { mean: replies.reduce((a, b) => a + b, 0) / replies.length },
  };
}

export interface BoundInput {
  /** Sandboxes in the pool (rollout episodes and verifications share them). */
  readonly sandboxes: number;
  /** Episodes that can run at once (rollout workers x lanes x episodes per lane), whatever the pool has. */
  readonly episodeSlots: number;
  /** Mean replayed model time per episode, seconds (the trace's part). */
  readonly waitS: number;
  /** Mean time per episode inside the sandbox (its tool calls), seconds. 0 for the trace-only bound. */
  readonly toolS: number;
  /** Mean time per sample of its verification in a sandbox, seconds. 0 for the trace-only bound. */
  readonly verifyS: number;
}

/**
 * What a perfect scheduler reaches on this work, in samples per second. An episode holds its sandbox from its
 * first turn to its submit (waiting on the model, then running its tool calls), and its verification holds a
 * sandbox again; a perfect scheduler keeps every sandbox busy all the time and never waits on a batch, so by
 * work conservation (Little's law over the pool) at most
 *     sandboxes / (wait + tool + verify)
 * samples finish a second. Episodes are also bounded by the slots that run them (a slot holds an episode from
 * its first turn to its submit, not its verification):
 *     episodeSlots / (wait + tool).
 * The bound is the smaller. The learner is left out: it trains a batch in milliseconds here (bench:loop
 * reports it idle > 99% of the time), and a perfect scheduler overlaps it with rollouts anyway.
 */
export function perfectSchedulerRate(input: BoundInput): number {
  for (const [name, value] of Object.entries(input)) if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0)) throw new ConfigError(`perfectSchedulerRate: ${name} must be a number >= 0, got ${value}`);
  if (input.sandboxes < 1 || input.episodeSlots < 1) throw new ConfigError('perfectSchedulerRate: sandboxes and episodeSlots must be >= 1');
  const perSample = input.waitS + input.toolS + input.verifyS;
  const perEpisode = input.waitS + input.toolS;
  if (perSample <= 0) throw new ConfigError('perfectSchedulerRate: a sample that takes no time has no bound');
  const pool = input.sandboxes / perSample;
  const slots = perEpisode > 0 ? input.episodeSlots / perEpisode : Number.POSITIVE_INFINITY;
  return Math.min(pool, slots);
}

/**
 * The synchronous batch loop on the same trace, as an idealised model: batches of `batchSize` episodes, each on
 * `sandboxes` sandboxes taken greedily in order (a batch ends with its slowest), back to back with nothing else
 * between them. Per-sample costs outside the trace are `perSampleS` (tool calls and verification, added to each
 * episode). Returns samples per second over the replayed episodes. Used to say what ratio the trace allows.
 */
export function synchronousModelRate(episodes: readonly TraceEpisode[], batchSize: number, sandboxes: number, perSampleS = 0): number {
  if (!Number.isInteger(batchSize) || batchSize < 1 || !Number.isInteger(sandboxes) || sandboxes < 1) throw new ConfigError('synchronousModelRate: batchSize and sandboxes must be whole numbers >= 1');
  if (episodes.length === 0) throw new ConfigError('synchronousModelRate: no episodes');
  let total = 0;
  for (let first = 0; first < episodes.length; first += batchSize) {
    const free = Array.from({ length: Math.min(sandboxes, batchSize) }, () => 0);
    for (const episode of episodes.slice(first, first + batchSize)) {
      // The next episode goes to the sandbox that frees first.
      let at = 0;
      for (let s = 1; s < free.length; s++) if (free[s]! < free[at]!) at = s;
      free[at] = free[at]! + episodeWaitS(episode) + perSampleS;
    }
    total += Math.max(...free);
  }
  return episodes.length / total;
}
