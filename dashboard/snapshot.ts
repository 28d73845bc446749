import { statSync } from 'node:fs';
import { sep } from 'node:path';
import { AnalyticsCatalog, openLake, partitionSuperseded, readParquetSql, type DataFile, type Lake, type QueryResult } from '../connectors/analytics/index.js';
import { readTopic, type KafkaAdmin, type TopicReader } from '../connectors/kafka/index.js';
import type { Counter, Gauge, Histogram, HistogramState, ProcessorContext } from '../pipelines/runtime/index.js';
import { errorMessage, TOPICS, type DeadLetter, type TopicKey } from '../schemas/index.js';
import type { ResolvedDashboardOptions } from './options.js';
import { meanInterval } from './stats.js';

/** What the page shows at one moment; every field says where it comes from in docs/dashboard.md. */
export interface Snapshot {
  readonly takenAt: string;
  readonly prefix: string;
  /** The run the analytics fields are about; null before any run has landed rows. */
  readonly runId: string | null;
  readonly stages: readonly StageRow[];
  readonly lag: readonly LagRow[];
  readonly inFlight: InFlight;
  /** Null when no sandbox pool of this process is observed (a dashboard on its own). */
  readonly pool: PoolRow | null;
  readonly processors: readonly ProcessorRow[];
  readonly throughput: readonly ThroughputRow[];
  readonly policyVersions: readonly PolicyVersionRow[];
  readonly hacks: { readonly total: number; readonly byKind: readonly CountRow[]; readonly recent: readonly HackRow[] };
  readonly deadLetters: { readonly total: number; readonly byReason: readonly DeadLetterReason[]; readonly recent: readonly DeadLetterRow[] };
  readonly verifierVersions: readonly VerifierVersionRow[];
  readonly learner: readonly LearnerRow[];
  /** Sources that could not be read this time (their last values stay on the page). */
  readonly problems: readonly string[];
}

export interface StageRow {
  readonly stage: string;
  readonly topic: string;
  /** Rows of the run in the analytics store; null for a topic the sink does not land. */
  readonly landed: number | null;
  /** Sum over partitions of the topic's end offset minus its start: records and transaction markers. */
  readonly offsets: number;
}

export interface LagRow {
  readonly group: string;
  readonly topic: string;
  /**
   * Records behind, summed over partitions: end offset minus committed offset minus the commit marker that
   * ends every transaction. Exact when at most one transaction is pending; each further one adds its marker.
   */
  readonly lag: number;
}

export interface InFlight {
  /** Lag of the rollout workers' group on the tasks topic: tasks published and not yet taken. */
  readonly tasksQueued: number | null;
  /** Records being handled by this process's rollout workers and verifiers now (null on a dashboard of its own). */
  readonly rollingOut: number | null;
  readonly verifying: number | null;
  /** Landed trajectories of the run with no landed verification, and verifications with no reward. */
  readonly awaitingVerification: number;
  readonly awaitingReward: number;
}

export interface PoolRow {
  readonly busy: number;
  readonly idle: number;
  readonly creating: number;
  readonly destroying: number;
  readonly reaped: number;
}

export interface ProcessorRow {
  readonly processor: string;
  readonly instance: string;
  readonly recordsIn: number;
  readonly recordsOut: number;
  readonly skipped: number;
  readonly errors: number;
  readonly deadLetters: number;
  readonly retries: number;
  readonly inFlight: number;
  readonly meanLatencyMs: number | null;
  /** The upper bound of the latency bucket that holds the 95th percentile. */
  readonly p95LatencyMs: number | null;
  /** Input records per second since the previous snapshot. */
  readonly perSecond: number;
}

export interface ThroughputRow {
  readonly stage: string;
  /** Start of the time bin (ISO, UTC) by the records' lineage createdAt. */
  readonly at: string;
  readonly records: number;
  readonly perSecond: number;
}

export interface PolicyVersionRow {
  readonly policyVersion: number;
  readonly episodes: number;
  readonly passes: number;
  readonly passRate: number;
  /** What the episodes are worth as independent ones: a task's episodes are correlated (the catalog's `version_pass_rates`). */
  readonly effectiveEpisodes: number;
  /** Wilson 95% interval of the pass rate over the effective episodes. */
  readonly passLow: number;
  readonly passHigh: number;
  readonly rewards: number;
  readonly meanReward: number | null;
  /** Normal-approximation 95% interval of the mean reward; null below two rewards. */
  readonly rewardLow: number | null;
  readonly rewardHigh: number | null;
}

export interface CountRow {
  readonly kind: string;
  readonly count: number;
}

export interface HackRow {
  readonly trajectoryId: string;
  readonly policyVersion: number;
  readonly kind: string;
  readonly evidence: string;
  readonly path: string | null;
  readonly line: number | null;
  /** Which check saw it (HackFlag.source). */
  readonly source: string;
}

export interface DeadLetterReason {
  readonly processor: string;
  readonly stage: string;
  readonly error: string;
  readonly count: number;
}

export interface DeadLetterRow {
  readonly processor: string;
  readonly source: string;
  readonly error: string;
  readonly message: string;
  readonly stage: string;
  readonly attempts: number;
  readonly failedAt: string;
}

export interface VerifierVersionRow {
  readonly verifierVersion: string;
  readonly verifications: number;
  readonly passRate: number;
}

export interface LearnerRow {
  readonly version: number;
  readonly samples: number;
  readonly meanReward: number;
  readonly meanAbsAdvantage: number;
  readonly gradNorm: number;
  readonly staleDropped: number;
  readonly createdAt: string;
}

/** The stages of the loop in order, with the analytics table each lands in. */
const STAGES: ReadonlyArray<{ key: TopicKey; table: string | null }> = [
  { key: 'tasks', table: 'tasks' },
  { key: 'trajectories', table: 'trajectories' },
  { key: 'verifications', table: 'verifications' },
  { key: 'rewards', table: 'rewards' },
  { key: 'policyCheckpoints', table: 'checkpoints' },
  { key: 'deadLetters', table: null },
];
const PER_RUN_TABLES = ['trajectories', 'verifications', 'rewards', 'checkpoints'];
const RECENT = 20;
/** Bins of the throughput chart: about this many over the run, never narrower than 10 s. */
const THROUGHPUT_BINS = 60;

type AnalyticsPart = Pick<Snapshot, 'throughput' | 'policyVersions' | 'hacks' | 'verifierVersions' | 'learner'> & {
  readonly landed: ReadonlyMap<string, number>;
  readonly awaitingVerification: number;
  readonly awaitingReward: number;
};

const EMPTY_ANALYTICS: AnalyticsPart = {
  landed: new Map(),
  awaitingVerification: 0,
  awaitingReward: 0,
  throughput: [],
  policyVersions: [],
  hacks: { total: 0, byKind: [], recent: [] },
  verifierVersions: [],
  learner: [],
};

const num = (value: unknown): number => Number(value ?? 0);
const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const rowsOf = (result: QueryResult): Array<Record<string, unknown>> => result.rows.map((row) => Object.fromEntries(result.columns.map((column, i) => [column, row[i]])));

/**
 * Watches the loop: Kafka offsets and consumer groups on every refresh, the analytics store whenever its
 * live files change, the dead-letter topic as it grows, and the processors and sandbox pool of this
 * process through the metrics registry. Listeners get each snapshot that differs from the last.
 */
export class LoopWatcher {
  private admin: KafkaAdmin | undefined;
  private deadLetterReader: TopicReader | undefined;
  /** Following the dead-letter topic starts again on the next refresh while it fails (a topic not created yet, say). */
  private following: Promise<void> | null = null;
  private followProblem: string | null = null;
  private readonly deadLetterCounts = new Map<string, DeadLetterReason>();
  private readonly recentDeadLetters: DeadLetterRow[] = [];
  private deadLetterTotal = 0;
  private analytics: AnalyticsPart = EMPTY_ANALYTICS;
  private analyticsKey = '';
  private analyticsRun: string | null = null;
  private latest: Snapshot;
  private lastJson = '';
  private previousCounts = new Map<string, { at: number; recordsIn: number }>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | null = null;
  private readonly listeners = new Set<(snapshot: Snapshot) => void>();
  private closed = false;
  /** The lake, opened at the first snapshot (a folder, or S3 listed through the storage port). */
  private lake: Lake | undefined;

  constructor(
    private readonly context: ProcessorContext,
    private readonly options: ResolvedDashboardOptions,
  ) {
    this.latest = this.compose([], [], { tasksQueued: null }, []);
  }

  /** The most recent snapshot. */
  get current(): Snapshot {
    return this.latest;
  }

  /** Calls `listener` with every changed snapshot until the returned function is called. */
  subscribe(listener: (snapshot: Snapshot) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Takes the first snapshot, then one every refreshMs; the dead-letter topic is followed in the background. */
  async start(): Promise<void> {
    this.admin = this.context.kafka.admin();
    await this.admin.connect();
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  /** Takes a snapshot now (one at a time: a call during a refresh waits for it). */
  refresh(): Promise<void> {
    // Runs on a timer inside the loop's own process (demo --dashboard): a failure is shown, never thrown.
    this.refreshing ??= this.takeSnapshot()
      .catch((error: unknown) => void (this.latest = { ...this.latest, takenAt: new Date().toISOString(), problems: [`snapshot: ${errorMessage(error)}`] }))
      .finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.refreshing;
    await this.following;
    await Promise.allSettled([this.deadLetterReader?.stop(), this.admin?.disconnect()]);
    this.lake?.close();
  }

  private async takeSnapshot(): Promise<void> {
    if (this.closed) return;
    if (!this.deadLetterReader) this.following ??= this.followDeadLetters().finally(() => (this.following = null));
    const problems: string[] = this.followProblem ? [this.followProblem] : [];
    let stagesOffsets: Array<{ key: TopicKey; offsets: number }> = [];
    let lag: LagRow[] = [];
    try {
      ({ stagesOffsets, lag } = await this.readKafka());
    } catch (error) {
      problems.push(`Kafka: ${errorMessage(error)}`);
      stagesOffsets = this.latest.stages.map((s) => ({ key: STAGES.find((stage) => TOPICS[stage.key].name === s.stage)!.key, offsets: s.offsets }));
      lag = [...this.latest.lag];
    }
    try {
      await this.readAnalytics();
    } catch (error) {
      problems.push(`analytics store ${this.options.dataDir}: ${errorMessage(error)}`);
    }
    const rolloutGroup = `${this.context.names.prefix}rollout-worker`;
    const taskTopic = this.context.names.name('tasks');
    const queued = lag.find((row) => row.group === rolloutGroup && row.topic === taskTopic)?.lag ?? null;
    const snapshot = this.compose(stagesOffsets, lag, { tasksQueued: queued }, problems);
    const { takenAt: _, ...content } = snapshot;
    const json = JSON.stringify(content);
    this.latest = snapshot;
    if (json === this.lastJson) return;
    this.lastJson = json;
    for (const listener of this.listeners) listener(snapshot);
  }

  private compose(stagesOffsets: ReadonlyArray<{ key: TopicKey; offsets: number }>, lag: readonly LagRow[], queue: { tasksQueued: number | null }, problems: string[]): Snapshot {
    const { registry } = this.options;
    registry.collect();
    const processors = this.readProcessors();
    const inFlightOf = (processor: string): number | null => {
      const rows = processors.filter((row) => row.processor === processor);
      return rows.length === 0 ? null : rows.reduce((sum, row) => sum + row.inFlight, 0);
    };
    return {
      takenAt: new Date().toISOString(),
      prefix: this.context.names.prefix,
      runId: this.analyticsRun,
      stages: STAGES.map(({ key, table }) => ({
        stage: TOPICS[key].name,
        topic: this.context.names.name(key),
        landed: table === null ? null : (this.analytics.landed.get(table) ?? 0),
        offsets: stagesOffsets.find((s) => s.key === key)?.offsets ?? 0,
      })),
      lag,
      inFlight: {
        tasksQueued: queue.tasksQueued,
        rollingOut: inFlightOf('rollout-worker'),
        verifying: inFlightOf('verifier'),
        awaitingVerification: this.analytics.awaitingVerification,
        awaitingReward: this.analytics.awaitingReward,
      },
      pool: this.readPool(),
      processors,
      throughput: this.analytics.throughput,
      policyVersions: this.analytics.policyVersions,
      hacks: this.analytics.hacks,
      deadLetters: {
        total: this.deadLetterTotal,
        byReason: [...this.deadLetterCounts.values()].sort((a, b) => b.count - a.count),
        recent: [...this.recentDeadLetters],
      },
      verifierVersions: this.analytics.verifierVersions,
      learner: this.analytics.learner,
      problems,
    };
  }

  /** End offsets of every catalog topic, and the lag of every consumer group under the prefix. */
  private async readKafka(): Promise<{ stagesOffsets: Array<{ key: TopicKey; offsets: number }>; lag: LagRow[] }> {
    const admin = this.admin!;
    const { names } = this.context;
    const ends = new Map<string, Array<{ partition: number; high: bigint; low: bigint }>>();
    const stagesOffsets = await Promise.all(
      STAGES.map(async ({ key }) => {
        const partitions = (await admin.fetchTopicOffsets(names.name(key))).map((p) => ({ partition: p.partition, high: BigInt(p.high), low: BigInt(p.low) }));
        ends.set(names.name(key), partitions);
        return { key, offsets: Number(partitions.reduce((sum, p) => sum + p.high - p.low, 0n)) };
      }),
    );
    const topics = [...ends.keys()];
    // The processors' groups are `<prefix><processor>`; table readers' throwaway groups (`trialrun-reader-*`) are not.
    const groups = (await admin.listGroups()).filter((id) => id.startsWith(names.prefix) && !id.startsWith('trialrun-reader-')).sort();
    const lag: LagRow[] = [];
    for (const group of groups) {
      for (const { topic, partitions } of await admin.fetchGroupOffsets(group, topics)) {
        // A group that never committed on a topic does not read it.
        if (!partitions.some((p) => Number(p.offset) >= 0)) continue;
        let behind = 0n;
        for (const { partition, high, low } of ends.get(topic) ?? []) {
          const committed = BigInt(partitions.find((p) => p.partition === partition)?.offset ?? '-1');
          const from = committed < 0n ? low : committed;
          // Every writer of the catalog topics is transactional, so the offset before the end is a commit
          // marker, never a record: a group that has caught up sits on it.
          if (high - from > 1n) behind += high - from - 1n;
        }
        lag.push({ group, topic, lag: Number(behind) });
      }
    }
    return { stagesOffsets, lag };
  }

  private async followDeadLetters(): Promise<void> {
    const topic = this.context.names.name('deadLetters');
    try {
      this.deadLetterReader = await readTopic(this.context.kafka, {
        topic,
        follow: true,
        settle: false,
        onRecord: async ({ value, partition, offset }) => {
          let letter: DeadLetter;
          try {
            letter = await this.context.serde.decode('deadLetters', value);
          } catch (error) {
            this.countDeadLetter({ processor: '?', sourceTopic: topic, partition, offset, error: { name: 'UndecodableDeadLetter', message: errorMessage(error), stage: 'decode' }, attempts: 1, failedAt: '' });
            return;
          }
          this.countDeadLetter(letter);
        },
      });
      this.followProblem = null;
      if (this.closed) await this.deadLetterReader.stop();
    } catch (error) {
      this.followProblem = `following ${topic}: ${errorMessage(error)}`;
    }
  }

  private countDeadLetter(letter: Pick<DeadLetter, 'processor' | 'sourceTopic' | 'partition' | 'offset' | 'attempts' | 'failedAt'> & { error: Pick<DeadLetter['error'], 'name' | 'message' | 'stage'> }): void {
    this.deadLetterTotal++;
    const key = JSON.stringify([letter.processor, letter.error.stage, letter.error.name]);
    const reason = this.deadLetterCounts.get(key);
    this.deadLetterCounts.set(key, { processor: letter.processor, stage: letter.error.stage, error: letter.error.name, count: (reason?.count ?? 0) + 1 });
    this.recentDeadLetters.unshift({
      processor: letter.processor,
      source: `${letter.sourceTopic}[${letter.partition}]@${letter.offset}`,
      error: letter.error.name,
      message: letter.error.message,
      stage: letter.error.stage,
      attempts: letter.attempts,
      failedAt: letter.failedAt,
    });
    this.recentDeadLetters.length = Math.min(this.recentDeadLetters.length, RECENT);
  }

  /** Re-reads the analytics store when its live files changed (the sink lands a file every few seconds). */
  private async readAnalytics(): Promise<void> {
    const { dataDir } = this.options;
    this.lake ??= openLake(dataDir, 'DashboardOptions.dataDir');
    const live = new Map<string, DataFile[]>();
    for (const table of PER_RUN_TABLES.concat('tasks')) live.set(table, partitionSuperseded(await this.lake.listDataFiles(table)).live);
    const key = JSON.stringify([...live].map(([table, files]) => [table, files.map((f) => f.path).sort()]));
    if (key === this.analyticsKey) return;
    const newest = this.options.runId === null ? newestFile(live) : null;
    if (this.options.runId === null && newest === null) {
      this.analyticsKey = key;
      return;
    }
    // A run's folder is its id made safe for a path (runFolder); for the newest run the file itself says the id.
    let runId = this.options.runId ?? runIdOfFolder(newest!.bucket);
    let catalog = await AnalyticsCatalog.open(dataDir, { runIds: [runId] });
    try {
      if (newest) {
        const written = (await catalog.query(`SELECT run_id FROM ${readParquetSql([newest.path])} LIMIT 1`)).rows[0]?.[0];
        if (typeof written === 'string' && written !== runId) {
          catalog.close();
          runId = written;
          catalog = await AnalyticsCatalog.open(dataDir, { runIds: [runId] });
        }
      }
      this.analytics = await queryAnalytics(catalog);
      this.analyticsRun = runId;
      this.analyticsKey = key;
    } finally {
      catalog.close();
    }
  }

  private readProcessors(): ProcessorRow[] {
    const { registry } = this.options;
    const counter = (name: string) => (registry.find(name) as Counter | undefined)?.read() ?? [];
    const keyOf = (labels: Record<string, string>): string => JSON.stringify([labels.processor, labels.instance]);
    const valueIn = (series: ReadonlyArray<{ labels: Record<string, string>; state: { value: number } }>, key: string): number =>
      series.find((s) => keyOf(s.labels) === key)?.state.value ?? 0;
    const recordsIn = counter('trialrun_processor_records_in_total');
    const families = {
      recordsOut: counter('trialrun_processor_records_out_total'),
      skipped: counter('trialrun_processor_records_skipped_total'),
      errors: counter('trialrun_processor_errors_total'),
      deadLetters: counter('trialrun_processor_dead_letters_total'),
      retries: counter('trialrun_processor_retries_total'),
      inFlight: (registry.find('trialrun_processor_in_flight') as Gauge | undefined)?.read() ?? [],
    };
    const latency = (registry.find('trialrun_processor_latency_seconds') as Histogram | undefined) ?? null;
    const latencies = latency?.read() ?? [];
    const now = performance.now();
    const counts = new Map<string, { at: number; recordsIn: number }>();
    const rows = [...new Set([...recordsIn, ...families.inFlight].map((s) => keyOf(s.labels)))].map((key) => {
      const [processor, instance] = JSON.parse(key) as [string, string];
      const handled = valueIn(recordsIn, key);
      counts.set(key, { at: now, recordsIn: handled });
      const previous = this.previousCounts.get(key);
      const histogram = latencies.find((s) => keyOf(s.labels) === key)?.state;
      return {
        processor,
        instance,
        recordsIn: handled,
        recordsOut: valueIn(families.recordsOut, key),
        skipped: valueIn(families.skipped, key),
        errors: valueIn(families.errors, key),
        deadLetters: valueIn(families.deadLetters, key),
        retries: valueIn(families.retries, key),
        inFlight: valueIn(families.inFlight, key),
        meanLatencyMs: histogram && histogram.count > 0 ? (1000 * histogram.sum) / histogram.count : null,
        p95LatencyMs: histogram && latency ? quantileBound(histogram, latency.buckets, 0.95) : null,
        perSecond: previous && now > previous.at ? ((handled - previous.recordsIn) * 1000) / (now - previous.at) : 0,
      };
    });
    this.previousCounts = counts;
    return rows.sort((a, b) => a.processor.localeCompare(b.processor) || a.instance.localeCompare(b.instance));
  }

  private readPool(): PoolRow | null {
    const sandboxes = (this.options.registry.find('trialrun_sandbox_pool_sandboxes') as Gauge | undefined)?.read() ?? [];
    if (sandboxes.length === 0) return null;
    const state = (name: string): number => sandboxes.filter((s) => s.labels.state === name).reduce((sum, s) => sum + s.state.value, 0);
    const reaped = (this.options.registry.find('trialrun_sandbox_pool_reaped_total') as Counter | undefined)?.read() ?? [];
    return { busy: state('busy'), idle: state('idle'), creating: state('creating'), destroying: state('destroying'), reaped: reaped.reduce((sum, s) => sum + s.state.value, 0) };
  }
}

/** The most recently written data file of the per-run tables: it belongs to the run going on, or the last one. */
function newestFile(live: ReadonlyMap<string, readonly DataFile[]>): DataFile | null {
  let newest: { file: DataFile; mtime: number } | null = null;
  for (const table of PER_RUN_TABLES) {
    for (const file of live.get(table) ?? []) {
      // An object on S3 has no local mtime: without --run, the dashboard then shows the run listed first.
      const mtime = file.path.startsWith('s3://') ? 0 : (statSync(file.path, { throwIfNoEntry: false })?.mtimeMs ?? 0);
      if (!newest || mtime > newest.mtime) newest = { file, mtime };
    }
  }
  return newest?.file ?? null;
}

/** `run_id=abc/hour=...` -> `abc`. */
const runIdOfFolder = (bucket: string): string => bucket.split(sep)[0]!.replace(/^run_id=/, '');

/** Milliseconds: the upper bound of the bucket where the cumulative count first reaches quantile q. */
function quantileBound(state: HistogramState, buckets: readonly number[], q: number): number | null {
  if (state.count === 0) return null;
  let cumulative = 0;
  for (let i = 0; i < buckets.length; i++) {
    cumulative += state.counts[i]!;
    if (cumulative >= q * state.count) return buckets[i]! * 1000;
  }
  return Number.POSITIVE_INFINITY;
}

/** Every analytics field of a snapshot, from a catalog opened on the one run. */
export async function queryAnalytics(catalog: AnalyticsCatalog): Promise<AnalyticsPart> {
  const rows = async (sql: string): Promise<Array<Record<string, unknown>>> => rowsOf(await catalog.query(sql));
  const scalar = async (sql: string): Promise<number> => num((await catalog.query(sql)).rows[0]?.[0]);
  const landed = new Map<string, number>();
  for (const table of [...PER_RUN_TABLES, 'tasks']) landed.set(table, await scalar(`SELECT count(*) FROM ${table}`));

  // One live verdict per trajectory (a re-scoring is a second opinion on an old episode, not a new one), and
  // intervals over what the episodes are worth: a task's episodes are correlated (version_pass_rates).
  const passes = await rows(`
    SELECT policy_version AS version, trajectories, passes, pass_rate, effective_n,
           wilson_low(pass_rate, effective_n) AS low, wilson_high(pass_rate, effective_n) AS high
    FROM version_pass_rates ORDER BY 1`);
  const rewards = new Map(
    (await rows(`SELECT policy_version AS version, count(*) AS n, avg(reward) AS mean, stddev_samp(reward) AS sd FROM rewards WHERE rescore_id IS NULL GROUP BY 1`)).map((r) => [num(r.version), r]),
  );
  const policyVersions = passes.map((row): PolicyVersionRow => {
    const episodes = num(row.trajectories);
    const passed = num(row.passes);
    const reward = rewards.get(num(row.version));
    const n = num(reward?.n);
    const mean = numOrNull(reward?.mean);
    const rewardInterval = mean === null ? null : meanInterval(mean, num(reward?.sd), n);
    return {
      policyVersion: num(row.version),
      episodes,
      passes: passed,
      passRate: num(row.pass_rate),
      effectiveEpisodes: num(row.effective_n),
      passLow: num(row.low),
      passHigh: num(row.high),
      rewards: n,
      meanReward: mean,
      rewardLow: rewardInterval?.low ?? null,
      rewardHigh: rewardInterval?.high ?? null,
    };
  });

  const span = (await rows(`
    SELECT epoch(min(created_at)) AS first, epoch(max(created_at)) AS last FROM (
      SELECT created_at FROM trajectories UNION ALL SELECT created_at FROM verifications UNION ALL SELECT created_at FROM rewards)`))[0];
  const binSeconds = Math.max(10, Math.ceil((num(span?.last) - num(span?.first)) / THROUGHPUT_BINS));
  const throughput = (
    await rows(`
      SELECT stage, strftime(time_bucket(to_seconds(${binSeconds}), created_at), '%Y-%m-%dT%H:%M:%SZ') AS at, count(*) AS records FROM (
        SELECT 'trajectories' AS stage, created_at FROM trajectories
        UNION ALL SELECT 'verifications', created_at FROM verifications WHERE rescore_id IS NULL
        UNION ALL SELECT 'rewards', created_at FROM rewards WHERE rescore_id IS NULL)
      WHERE created_at IS NOT NULL GROUP BY 1, 2 ORDER BY 2, 1`)
  ).map((r): ThroughputRow => ({ stage: String(r.stage), at: String(r.at), records: num(r.records), perSecond: num(r.records) / binSeconds }));

  const hackRows = `SELECT trajectory_id, policy_version, created_at, unnest(hacks) AS h FROM verifications`;
  const hacks = {
    total: await scalar(`SELECT count(*) FROM (${hackRows})`),
    byKind: (await rows(`SELECT h.kind AS kind, count(*) AS count FROM (${hackRows}) GROUP BY 1 ORDER BY 2 DESC, 1`)).map((r) => ({ kind: String(r.kind), count: num(r.count) })),
    recent: (await rows(`SELECT trajectory_id, policy_version, h.kind AS kind, h.evidence AS evidence, h.path AS path, h.line AS line, h.source AS source FROM (${hackRows}) ORDER BY created_at DESC LIMIT ${RECENT}`)).map(
      (r): HackRow => ({ trajectoryId: String(r.trajectory_id), policyVersion: num(r.policy_version), kind: String(r.kind), evidence: String(r.evidence ?? ''), path: r.path === null ? null : String(r.path), line: numOrNull(r.line), source: String(r.source ?? '') }),
    ),
  };
  const verifierVersions = (
    await rows(`SELECT coalesce(verifier_version, '(none)') AS version, count(*) AS n, avg(CASE WHEN passed THEN 1 ELSE 0 END) AS pass_rate FROM verifications GROUP BY 1 ORDER BY 1`)
  ).map((r): VerifierVersionRow => ({ verifierVersion: String(r.version), verifications: num(r.n), passRate: num(r.pass_rate) }));
  const learner = (
    await rows(`SELECT version, samples, mean_reward, mean_abs_advantage, grad_norm, stale_dropped, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created_at FROM checkpoints ORDER BY version`)
  ).map((r): LearnerRow => ({
    version: num(r.version),
    samples: num(r.samples),
    meanReward: num(r.mean_reward),
    meanAbsAdvantage: num(r.mean_abs_advantage),
    gradNorm: num(r.grad_norm),
    staleDropped: num(r.stale_dropped),
    createdAt: String(r.created_at),
  }));
  return {
    landed,
    awaitingVerification: await scalar(`SELECT count(*) FROM trajectories t WHERE NOT EXISTS (SELECT 1 FROM verifications v WHERE v.trajectory_id = t.trajectory_id AND v.rescore_id IS NULL)`),
    awaitingReward: await scalar(`SELECT count(*) FROM verifications v WHERE v.rescore_id IS NULL AND NOT EXISTS (SELECT 1 FROM rewards r WHERE r.trajectory_id = v.trajectory_id AND r.rescore_id IS NULL)`),
    throughput,
    policyVersions,
    hacks,
    verifierVersions,
    learner,
  };
}

