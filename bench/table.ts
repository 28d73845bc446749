/**
 * The README's table of benchmark figures, made from `bench/results/*.json` (written by each benchmark's
 * `BenchReport.save`): `npm run bench:table` prints it; `npm run bench:table -- --write` replaces the block
 * between the `bench-table` markers in README.md. Figures are never typed by hand.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkoutRoot } from '../schemas/index.js';
import { benchArgs, type Comparison, type Figures } from './harness.js';

interface SavedRun {
  readonly bench: string;
  readonly command: string;
  readonly finishedAt: string;
  readonly cores: number;
  readonly load: { readonly start: number; readonly end: number };
  readonly comparisons: readonly Comparison[];
}

const START = '<!-- bench-table:start (npm run bench:table -- --write) -->';
const END = '<!-- bench-table:end -->';

const number = (value: number): string => (Math.abs(value) >= 100 ? Math.round(value).toLocaleString('en-US') : value.toPrecision(3));
const spread = (f: Figures): string => `${number(f.median)} (${number(f.min)}-${number(f.max)})`;

export function benchTable(runs: readonly SavedRun[]): string {
  const lines = [
    '| benchmark | what | ours, median (min-max) | baseline, median (min-max) | ratio ours/baseline | rounds | load at start/end | run |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const run of runs) {
    for (const c of run.comparisons) {
      const ratio = `${c.ratio.median.toFixed(2)}x (${c.ratio.min.toFixed(2)}-${c.ratio.max.toFixed(2)})${c.goal ? `, goal ${c.goal}` : ''}${c.higherIsBetter ? '' : ', lower is better'}`;
      lines.push(`| \`bench:${run.bench}\` | ${c.metric} | ${spread(c.ours)} ${c.unit} | ${c.baselineName}: ${spread(c.baseline)} ${c.unit} | ${ratio} | ${c.ours.n} | ${run.load.start}/${run.load.end} on ${run.cores} cores | ${run.finishedAt.slice(0, 10)} |`);
    }
  }
  return lines.join('\n');
}

function savedRuns(): SavedRun[] {
  const dir = join(checkoutRoot(), 'bench', 'results');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as SavedRun);
}

const cli = benchArgs(
  'bench:table',
  'npm run bench:table [-- --write]',
  { write: { type: 'boolean', default: false } },
);
const { values } = cli;
const runs = savedRuns();
if (runs.length === 0) throw new Error('no saved benchmark runs in bench/results/; run a benchmark first (npm run bench:<name>)');
const table = benchTable(runs);
const commands = runs.map((run) => `- \`${run.command}\``).join('\n');
const block = `${START}\n${table}\n\nReproduce with:\n${commands}\n${END}`;
if (values.write) {
  const readme = join(checkoutRoot(), 'README.md');
  const text = readFileSync(readme, 'utf8');
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`README.md has no ${START} ... ${END} block to replace`);
  writeFileSync(readme, `${text.slice(0, from)}${block}${text.slice(to + END.length)}`);
  process.stdout.write(`README.md: benchmark table rewritten from ${runs.length} saved runs\n`);
} else {
  process.stdout.write(`${block}\n`);
}
