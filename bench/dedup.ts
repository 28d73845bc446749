/**
 * trialrun's dedup beside Hugging Face's datatrove: `npm run bench:dedup [-- --rows 100000 --rounds 3 --shards 2
 * --workers 2 --dir /tmp/trialrun-bench-dedup]`.
 *
 * The same rows for every side: the bench's generated repair rows (bench/repair-rows.ts, no broken or
 * schema-invalid rows, as no dedup sees those) with planted exact copies, layout-only copies, renamed-identifier
 * copies, commented copies and eval copies of train rows, whose ground truth the generator knows, written as
 * --shards JSON Lines files. Three sides, each in a fresh process per round, interleaved over --rounds rounds
 * (bench/harness.ts):
 *   - datatrove: its MinHash pipeline (bench/dedup_datatrove.py) in its four stages, signatures, buckets,
 *     clusters, filter, each through a LocalPipelineExecutor with --workers workers, from the venv
 *     `stack/datatrove.ts` installs under the cache;
 *   - trialrun, dedup stages only: read and parse the rows, fingerprint them (Python tokens, identifiers as
 *     placeholders), MinHash, then `deduplicateColumns` (exact keys, LSH near duplicates, contamination), one thread;
 *   - trialrun, the whole task job (dry run): read, map, validate (with its --workers check threads), dedup,
 *     curriculum, build, each task written to a file as it is built.
 * Per side: rows per second (valid rows over the side's own wall time, interpreter start excluded), peak
 * resident memory of its whole process tree (sampled from /proc every 100 ms), and precision and recall of
 * the rows it removed against the planted truth: a cluster of n rows with one origin should lose n - 1 of
 * them, whichever it keeps. Recall per planted kind comes from the clusters of one original and one copy.
 * Settings, matched where datatrove's options allow: 5-token shingles, 9 bands of 14 rows (trialrun's
 * `lshParameters(0.8, 128)`; 126 of trialrun's 128 values). What differs is printed with the figures.
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { deduplicateColumns } from '../pipelines/jobs/task-job/dedup.js';
import { DedupColumns } from '../pipelines/jobs/task-job/columns.js';
import { RowFingerprinter, resolveJob, runTaskJob, MinHasher } from '../pipelines/jobs/task-job/index.js';
import { keptBits, lshParameters } from '../pipelines/jobs/task-job/minhash.js';
import { checkoutRoot } from '../schemas/index.js';
import { datatrovePython, DATATROVE_VERSION, stackPaths } from '../stack/index.js';
import { benchArgs, BenchReport, figures, interleave } from './harness.js';
import { plantedRow, scoreRemoved, type GeneratedRow, type Quality, type Truth } from './repair-rows.js';

const cli = benchArgs(
  'bench:dedup',
  'npm run bench:dedup [-- --rows 100000 --rounds 3 --shards 2 --workers 2 --dir /tmp/trialrun-bench-dedup]',
  {
    rows: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    shards: { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    dir: { type: 'string', default: '/tmp/trialrun-bench-dedup' },
    /** Internal: run one trialrun side over the shards in --input, print its figures as JSON, and exit. */
    side: { type: 'string' },
    input: { type: 'string' },
    out: { type: 'string' },
  },
  { help: { side: 'internal: one trialrun side (trialrunDedup or trialrunJob) over --input, figures as JSON to --out', input: 'internal: the shards of --side', out: 'internal: where --side writes' } },
);
const { values } = cli;
const whole = (name: 'rows' | 'rounds' | 'shards' | 'workers', min: number): number => cli.int(name, min);
const ROWS = whole('rows', 1000);
const ROUNDS = whole('rounds', 3);
const SHARDS = whole('shards', 1);
const WORKERS = whole('workers', 1);
const DIR = resolve(values.dir!);
// Bump when the generator changes, so a cached data set from an older generator is not reused.
const GENERATOR = 'v2';
/** trialrun's defaults (DedupOptions, the job's dedup spec), which datatrove is set to match. */
const THRESHOLD = 0.8;
const SHINGLE_TOKENS = 5;
const SIGNATURE_SIZE = 128;
const LSH = lshParameters(THRESHOLD, SIGNATURE_SIZE);

// --- the data set and its truth --------------------------------------------------------------------------

/** The shards (rows in order, split into SHARDS contiguous files) and truth.json, made once per size. */
async function dataSet(rows: number): Promise<{ folder: string; files: string[]; truth: Map<string, Truth> }> {
  const folder = join(DIR, `rows-${GENERATOR}-${rows}-${SHARDS}`);
  const files = Array.from({ length: SHARDS }, (_, shard) => join(folder, `${String(shard).padStart(5, '0')}.jsonl`));
  const truthFile = join(folder, 'truth.json');
  if (!existsSync(truthFile)) {
    const started = performance.now();
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const truth: Array<[string, Truth]> = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      const out = createWriteStream(files[shard]!);
      let buffer = '';
      for (let index = Math.floor((shard * rows) / SHARDS); index < Math.floor(((shard + 1) * rows) / SHARDS); index++) {
        const planted = plantedRow(index, { invalidRows: false });
        truth.push([`gen-${index}`, { kind: planted.kind, origin: planted.origin }]);
        buffer += `${planted.line}\n`;
        if (buffer.length > 1 << 22) {
          if (!out.write(buffer)) await new Promise<void>((done) => out.once('drain', () => done()));
          buffer = '';
        }
      }
      await new Promise<void>((done, fail) => out.end(buffer, () => done()).on('error', fail));
    }
    writeFileSync(`${truthFile}.partial`, JSON.stringify(truth));
    renameSync(`${truthFile}.partial`, truthFile);
    console.log(`generated ${rows.toLocaleString('en-US')} rows in ${SHARDS} shards in ${((performance.now() - started) / 1000).toFixed(1)} s: ${folder}`);
  }
  const truth = new Map<string, Truth>(JSON.parse(readFileSync(truthFile, 'utf8')) as Array<[string, Truth]>);
  return { folder, files, truth };
}

// --- the sides ---------------------------------------------------------------------------------------------

/** What a side's process prints: its own wall seconds; the ids it removed are in the file it was given. */
interface SideOutput {
  readonly seconds: number;
  readonly stages?: Readonly<Record<string, number>>;
}

/** trialrun's dedup stages over the shards, streamed: parse, fingerprint, MinHash, then the dedup passes. */
async function trialrunDedup(files: readonly string[], out: string): Promise<void> {
  const started = performance.now();
  const hasher = new MinHasher({ shingleTokens: SHINGLE_TOKENS, signatureSize: SIGNATURE_SIZE });
  const columns = new DedupColumns(SIGNATURE_SIZE);
  const fingerprinter = new RowFingerprinter();
  const signature = new Uint32Array(SIGNATURE_SIZE);
  const kept = new Uint8Array(SIGNATURE_SIZE);
  const ids: string[] = [];
  for (const file of files) {
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      const row = JSON.parse(line) as GeneratedRow;
      const fingerprint = fingerprinter.fingerprint({ prose: [row.description], code: [row.buggy_source, row.visible_tests, row.hidden_tests] });
      hasher.signatureOfTokens(fingerprinter.tokens.buffer, fingerprint.tokenCount, signature);
      columns.add({ family: row.id, split: row.split, priority: row.priority }, fingerprint.digest, keptBits(signature, kept));
      ids.push(row.id);
    }
  }
  const fingerprinted = performance.now();
  const result = deduplicateColumns(columns, (index) => ids[index]!, { threshold: THRESHOLD });
  const seconds = (performance.now() - started) / 1000;
  columns.close();
  writeFileSync(out, result.rejects.map((reject) => `${ids[reject.index]}\n`).join(''));
  const output: SideOutput = { seconds, stages: { 'read + fingerprint + MinHash': (fingerprinted - started) / 1000, 'exact + LSH + contamination': seconds - (fingerprinted - started) / 1000 } };
  process.stdout.write(`${JSON.stringify(output)}\n`);
}

/** The whole task job, dry run, over the shards; the ids dedup dropped. */
async function trialrunJob(files: readonly string[], out: string, workDir: string): Promise<void> {
  const tasksFile = join(workDir, 'tasks.jsonl');
  const job = resolveJob({ name: 'bench-dedup', sources: files.map((path) => ({ path })), importer: 'repair-rows' }, workDir);
  const report = await runTaskJob({ job, rejectsDir: join(workDir, 'rejects'), dryRun: true, keepTasks: false, tasksFile, tempDir: workDir, checkThreads: WORKERS });
  writeFileSync(out, report.duplicates.map((duplicate) => `${duplicate.taskId}\n`).join(''));
  const output: SideOutput = { seconds: report.seconds, stages: Object.fromEntries(report.stages.map((stage) => [stage.stage, stage.seconds])) };
  process.stdout.write(`${JSON.stringify(output)}\n`);
}

/** Peak resident memory of a process and all its descendants, summed, sampled from /proc every `everyMs`. */
function treeRssSampler(rootPid: number, everyMs = 100): { stop: () => number } {
  const pageBytes = 4096;
  let peak = 0;
  const sample = (): void => {
    const children = new Map<number, number[]>();
    let total = 0;
    const rss = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // Fields after the command's closing parenthesis: state, ppid, ...; rss is field 24 (22 after it).
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const pid = Number(entry);
        const parent = Number(fields[1]);
        rss.set(pid, Number(fields[21]) * pageBytes);
        const list = children.get(parent);
        if (list) list.push(pid);
        else children.set(parent, [pid]);
      } catch {
        // The process ended between the listing and the read.
      }
    }
    const stack = [rootPid];
    while (stack.length > 0) {
      const pid = stack.pop()!;
      total += rss.get(pid) ?? 0;
      stack.push(...(children.get(pid) ?? []));
    }
    peak = Math.max(peak, total);
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return peak / (1 << 20);
    },
  };
}

/** Runs a side's command in a fresh process, sampling its tree's memory; its JSON line and peak RSS (MiB). */
async function runSide(command: string, args: readonly string[]): Promise<SideOutput & { peakRssMiB: number }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const sampler = treeRssSampler(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const code = await new Promise<number | null>((done) => child.on('close', (exit) => done(exit)));
  const peakRssMiB = sampler.stop();
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}:\n${stderr}`);
  const last = stdout.trim().split('\n').at(-1)!;
  return { ...(JSON.parse(last) as SideOutput), peakRssMiB };
}

// --- the run -----------------------------------------------------------------------------------------------

type SideName = 'datatrove' | 'trialrunDedup' | 'trialrunJob';

interface SideRound {
  readonly rowsPerSecond: number;
  readonly peakRssMiB: number;
  readonly quality: Quality;
  readonly stages: Readonly<Record<string, number>>;
}

/** `100k`, `1m`, `20k`: a row count as a result file's variant. */
function sizeLabel(rows: number): string {
  if (rows % 1_000_000 === 0) return `${rows / 1_000_000}m`;
  if (rows % 1000 === 0) return `${rows / 1000}k`;
  return String(rows);
}

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const command = `npm run bench:dedup -- --rows ${ROWS} --rounds ${ROUNDS} --shards ${SHARDS} --workers ${WORKERS}`;
  // One result file per size, so the table keeps the figures at 100,000 rows beside those at a million.
  const report = new BenchReport('dedup', command, sizeLabel(ROWS));
  const python = await datatrovePython((line) => console.log(`[datatrove] ${line}`), { logFile: join(stackPaths().stateDir, 'logs', 'datatrove-venv.log') });
  const { folder, files, truth } = await dataSet(ROWS);
  const planted: Record<string, number> = {};
  for (const { kind } of truth.values()) planted[kind] = (planted[kind] ?? 0) + 1;
  console.log(`data set: ${ROWS.toLocaleString('en-US')} rows, planted ${Object.entries(planted).map(([kind, n]) => `${kind} ${n.toLocaleString('en-US')}`).join(', ')}`);
  const script = join(checkoutRoot(), 'bench', 'dedup_datatrove.py');
  const self = fileURLToPath(import.meta.url);
  const rounds: Record<SideName, SideRound[]> = { datatrove: [], trialrunDedup: [], trialrunJob: [] };
  const measure = async (side: SideName): Promise<number> => {
    const work = join(DIR, `work-${side}`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    const removedFile = side === 'datatrove' ? join(work, 'removed-ids.txt') : join(work, 'removed.txt');
    const output =
      side === 'datatrove'
        ? await runSide(python, [script, '--input', folder, '--work', work, '--shards', String(SHARDS), '--workers', String(WORKERS), '--n-grams', String(SHINGLE_TOKENS), '--buckets', String(LSH.bands), '--hashes-per-bucket', String(LSH.rows)])
        : await runSide(process.execPath, [...process.execArgv, self, '--side', side, '--input', folder, '--out', removedFile, '--dir', work, '--workers', String(WORKERS)]);
    const removed = readFileSync(removedFile, 'utf8').split('\n').filter((line) => line.length > 0);
    const quality = scoreRemoved(truth, removed);
    const rowsPerSecond = ROWS / output.seconds;
    rounds[side].push({ rowsPerSecond, peakRssMiB: output.peakRssMiB, quality, stages: output.stages ?? {} });
    console.log(
      `  ${side.padEnd(14)} ${Math.round(rowsPerSecond).toLocaleString('en-US').padStart(8)} rows/s  ${output.seconds.toFixed(1).padStart(6)} s  peak RSS ${Math.round(output.peakRssMiB).toLocaleString('en-US')} MiB  ` +
        `removed ${quality.removed}  precision ${quality.precision.toFixed(4)}  recall ${quality.recall.toFixed(4)}`,
    );
    rmSync(work, { recursive: true, force: true });
    return rowsPerSecond;
  };
  const rates = await interleave(
    { datatrove: () => measure('datatrove'), trialrunDedup: () => measure('trialrunDedup'), trialrunJob: () => measure('trialrunJob') },
    { rounds: ROUNDS, warmup: 0, onRound: (round) => console.log(`round ${round} done`) },
  );
  const rowsLabel = `${ROWS.toLocaleString('en-US')} rows`;
  const datatroveName = `datatrove ${DATATROVE_VERSION} MinHash, 4 stages, ${WORKERS} workers`;
  const pick = (side: SideName, of: (round: SideRound) => number): number[] => rounds[side].map(of);
  for (const [side, what] of [['trialrunDedup', 'dedup stages only (parse, fingerprint, MinHash, dedup; 1 thread)'], ['trialrunJob', `whole task job, dry run (${WORKERS} check threads)`]] as const) {
    report.compare({ metric: `${what}, ${rowsLabel}`, unit: 'rows/s', ours: rates[side], baseline: rates.datatrove, baselineName: datatroveName, higherIsBetter: true, goal: '>= 2x' });
    report.compare({ metric: `${what}, peak RSS of the process tree, ${rowsLabel}`, unit: 'MiB', ours: pick(side, (r) => r.peakRssMiB), baseline: pick('datatrove', (r) => r.peakRssMiB), baselineName: datatroveName, higherIsBetter: false });
    report.compare({ metric: `${what}, recall against the planted copies, ${rowsLabel}`, unit: 'fraction', ours: pick(side, (r) => r.quality.recall), baseline: pick('datatrove', (r) => r.quality.recall), baselineName: datatroveName, higherIsBetter: true, goal: '>= 1x' });
    report.compare({ metric: `${what}, precision of the rows removed, ${rowsLabel}`, unit: 'fraction', ours: pick(side, (r) => r.quality.precision), baseline: pick('datatrove', (r) => r.quality.precision), baselineName: datatroveName, higherIsBetter: true, goal: '>= 1x' });
  }
  const lines: string[] = ['recall by planted kind (clusters of one original and one copy), last round:'];
  for (const side of ['datatrove', 'trialrunDedup', 'trialrunJob'] as const) {
    const last = rounds[side].at(-1)!;
    lines.push(`  ${side.padEnd(14)} ${Object.entries(last.quality.recallByKind).map(([kind, recall]) => `${kind} ${recall.toFixed(3)}`).join(', ')}`);
  }
  lines.push('seconds per stage, median of the rounds:');
  for (const side of ['datatrove', 'trialrunDedup', 'trialrunJob'] as const) {
    const names = Object.keys(rounds[side][0]!.stages);
    lines.push(`  ${side.padEnd(14)} ${names.map((name) => `${name} ${figures(pick(side, (r) => r.stages[name] ?? 0)).median.toFixed(2)}`).join(', ')}`);
  }
  lines.push(
    `settings: both 5-token shingles, LSH of ${LSH.bands} bands x ${LSH.rows} rows (trialrun lshParameters(${THRESHOLD}, ${SIGNATURE_SIZE})). Different: datatrove computes ${LSH.bands * LSH.rows} independent 64-bit permutations, ` +
      `trialrun ${SIGNATURE_SIZE} one-permutation bins keeping 8 bits; datatrove tokenizes lower-cased text without punctuation or digits with spaCy's English rules, ` +
      'trialrun Python tokens with identifiers as placeholders (comments out); datatrove drops every candidate sharing a band (no threshold option), ' +
      `trialrun checks a candidate's estimated similarity against ${THRESHOLD}; trialrun dedups within a split and drops train rows that copy eval rows.`,
  );
  console.log(lines.join('\n'));
  report.save();
}

if (values.side !== undefined) {
  const input = values.input!;
  const files = readdirSync(input).filter((name) => name.endsWith('.jsonl')).sort().map((name) => join(input, name));
  if (values.side === 'trialrunDedup') await trialrunDedup(files, values.out!);
  else if (values.side === 'trialrunJob') await trialrunJob(files, values.out!, DIR);
  else cli.fail(`--side must be trialrunDedup or trialrunJob, got ${values.side}`);
} else {
  await main();
}
