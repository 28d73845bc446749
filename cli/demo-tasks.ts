import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SandboxPool } from '../connectors/sandbox/index.js';
import { loadJobFile, runTaskJob } from '../pipelines/jobs/task-job/index.js';
import { imageFor } from '../stack/index.js';
import { bundledTasks, rejectsLocation, repoRoot } from './paths.js';

/** The job whose tasks the demo learns on: program-repair tasks derived from HumanEval, split by problem. */
export const HUMANEVAL_JOB = (): string => join(repoRoot(), 'tasks', 'jobs', 'humaneval-repair.yaml');

/**
 * The demo's task rows: the HumanEval-derived tasks (470 training, 116 held out from problems never trained
 * on), derived once by the task job into `<data>/humaneval-repair.jsonl` and reused after; the bundled 31
 * tasks when the HumanEval data set is not on this machine (too few to hold any out meaningfully, said so).
 */
export async function demoTaskRows(dataDir: string, pool: SandboxPool, log: (line: string) => void): Promise<{ file: string; note: string | null }> {
  const file = join(dataDir, 'humaneval-repair.jsonl');
  if (existsSync(file)) return { file, note: null };
  const job = loadJobFile(HUMANEVAL_JOB());
  const missing = job.sources.map((source) => source.path).filter((path) => !existsSync(path));
  if (missing.length > 0) {
    return { file: bundledTasks(), note: `the HumanEval data set (${missing.join(', ')}) is not here: the demo uses the 31 bundled tasks, of which about 8 are held out, so its intervals are wide` };
  }
  const started = performance.now();
  const report = await runTaskJob({ job, rejectsDir: rejectsLocation({ 'data-dir': dataDir }), dryRun: true, pool, imageFor, onProgress: () => {} });
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, report.rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
  log(`[tasks] derived ${report.rows.length} HumanEval repair tasks into ${file} (${((performance.now() - started) / 1000).toFixed(0)}s, once)`);
  return { file, note: null };
}
