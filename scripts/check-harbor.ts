/**
 * `npm run check:harbor`: our Harbor tasks under Harbor's own runner give the verdicts trialrun's verifier gives.
 *
 * The harbor package (PyPI, in a cached virtualenv of its own) runs every bundled Harbor task, plus one task
 * folder written by `harbor tasks init` and filled in from scripts/harbor/init-task/, with its `oracle` agent
 * (solution/solve.sh) and its `nop` agent (the starting files as they are), in its docker environment (docker
 * compose v2, built once from its Go module; stack/harbor.ts). trialrun imports the same folders through its task
 * job and verifies the same two trees: the reference solution and the starting files. Every task's Harbor
 * reward must equal trialrun's score on both, and no Harbor trial may end in an exception. Prints the table and
 * the time taken; exits 1 on any difference.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workspaceJobTasks } from '../cli/workspace-tasks.js';
import { DockerSandboxPool } from '../connectors/sandbox/index.js';
import { Verifier } from '../pipelines/verifier/index.js';
import { checkoutFile, errorMessage, NO_WORKSPACE_EXTRAS, NotFoundError, nowIso, type FileTree, type Task, type Trajectory } from '../schemas/index.js';
import { composeDockerConfig, harborCommand, imageFor, setupLogFile, stackPaths, taskImagePlan } from '../stack/index.js';
import { dockerClient } from '../stack/docker.js';

const SET = 'ops-harbor';
/** The task `harbor tasks init` writes; its name is a Harbor package name, `trialrun/<INIT_TASK>`. */
const INIT_TASK = 'words-init';
const AGENTS = ['oracle', 'nop'] as const;
type Agent = (typeof AGENTS)[number];

/** One Harbor trial's outcome: its reward, or the exception it ended in. */
interface HarborOutcome {
  readonly reward: number | null;
  readonly exception: string | null;
}

const log = (line: string): void => void process.stderr.write(`[check:harbor] ${line}\n`);
const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(0)} s`;

/** Runs a command with its output appended to `logFile`; resolves with its exit status. */
function runLogged(command: string, args: readonly string[], logFile: string, env: NodeJS.ProcessEnv, cwd?: string): Promise<number> {
  const out = openSync(logFile, 'a');
  writeFileSync(out, `\n--- ${nowIso()} running: ${command} ${args.join(' ')}\n`);
  const child = spawn(command, args, { stdio: ['ignore', out, out], env, ...(cwd === undefined ? {} : { cwd }) });
  return new Promise<number>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`cannot run ${command}: ${error.message}`)));
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  }).finally(() => closeSync(out));
}

/** The trials of a finished Harbor job folder, by task name. */
function harborOutcomes(jobDir: string): Map<string, HarborOutcome> {
  const outcomes = new Map<string, HarborOutcome>();
  for (const entry of readdirSync(jobDir, { withFileTypes: true })) {
    const file = join(jobDir, entry.name, 'result.json');
    if (!entry.isDirectory() || !existsSync(file)) continue;
    const trial = JSON.parse(readFileSync(file, 'utf8')) as { task_name: string; verifier_result?: { rewards?: { reward?: number } } | null; exception_info?: { exception_type?: string } | null };
    outcomes.set(trial.task_name, { reward: trial.verifier_result?.rewards?.reward ?? null, exception: trial.exception_info?.exception_type ?? null });
  }
  return outcomes;
}

function trajectoryOf(task: Task, finalFiles: FileTree, variant: string): Trajectory {
  const groupId = `check-harbor/${task.taskId}/${variant}`;
  return {
    trajectoryId: `${groupId}/0`,
    groupId,
    groupSize: 1,
    envId: task.envId,
    policyId: 'check-harbor',
    steps: [],
    finalFiles,
    finalExtras: NO_WORKSPACE_EXTRAS,
    outcome: 'submitted',
    error: null,
    totalMs: 0,
    sandboxMs: 0,
    lineage: { taskId: task.taskId, attempt: 0, runId: 'check-harbor', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  } as Trajectory;
}

async function main(): Promise<number> {
  const started = Date.now();
  const { stateDir } = stackPaths();
  const setupLog = setupLogFile(stateDir, 'harbor');
  const harbor = await harborCommand(log, { logFile: setupLog });
  const dockerConfig = await composeDockerConfig(log, { logFile: setupLog });
  const readyAt = Date.now();

  // The bundled set and the task Harbor's own tooling writes, side by side in one dataset folder.
  const work = mkdtempSync(join(tmpdir(), 'trialrun-check-harbor-'));
  const runLog = join(work, 'harbor.log');
  const dataset = join(work, SET);
  cpSync(checkoutFile(join('tasks', SET)), dataset, { recursive: true });
  // LiteLLM (imported by harbor) would otherwise try to download its model price list at start-up.
  const env = { ...process.env, DOCKER_CONFIG: dockerConfig, LITELLM_LOCAL_MODEL_COST_MAP: 'True' };
  const initStatus = await runLogged(harbor, ['tasks', 'init', `trialrun/${INIT_TASK}`, '--no-package', '--no-pytest', '--verifier-mode', 'shared', '--tasks-dir', dataset], runLog, env);
  if (initStatus !== 0 || !existsSync(join(dataset, INIT_TASK, 'task.toml'))) throw new Error(`harbor tasks init exited ${initStatus} without writing ${INIT_TASK}/task.toml (log: ${runLog})`);
  // Its task.toml stays as Harbor wrote it; the prompt, image, tests and solution are filled in.
  cpSync(checkoutFile('scripts/harbor/init-task'), join(dataset, INIT_TASK), { recursive: true, force: true });
  const taskIds = readdirSync(dataset, { withFileTypes: true }).filter((entry) => entry.isDirectory() && existsSync(join(dataset, entry.name, 'task.toml'))).map((entry) => entry.name).sort();
  log(`${taskIds.length} tasks (${SET} and ${INIT_TASK} from harbor tasks init) in ${dataset}`);

  // Harbor builds each environment/Dockerfile with its default FROM (`trialrun/<recipe>`, i.e. :latest): point
  // those tags at this checkout's images, as `stack up` does after building them.
  const docker = dockerClient();
  const parents = new Map(taskIds.map((id) => taskImagePlan(join(dataset, id, 'environment'), id)).map((plan) => [plan.parentTag, plan.parent]));
  for (const [parentTag, parent] of parents) await docker.getImage(parentTag).tag({ repo: `trialrun/${parent}`, tag: 'latest' });

  const harborResults = new Map<Agent, Map<string, HarborOutcome>>();
  const harborStarted = Date.now();
  for (const agent of AGENTS) {
    const agentStarted = Date.now();
    const jobs = join(work, 'jobs');
    const args = ['run', '--path', dataset, '--agent', agent, '--env', 'docker', '--n-concurrent', '2', '--extra-docker-compose', checkoutFile('scripts/harbor/no-network.compose.yaml'), '--jobs-dir', jobs, '--job-name', agent, '--yes', '--quiet'];
    const status = await runLogged(harbor, args, runLog, env);
    if (status !== 0) throw new Error(`harbor run --agent ${agent} exited ${status} (log: ${runLog})`);
    harborResults.set(agent, harborOutcomes(join(jobs, agent)));
    log(`harbor run --agent ${agent}: ${harborResults.get(agent)!.size} trials in ${seconds(agentStarted)}`);
  }
  const harborSeconds = (Date.now() - harborStarted) / 1000;

  // trialrun: the same folders through the task job (images, starting files, solve.sh), then its verifier.
  const trialrunStarted = Date.now();
  const pool = new DockerSandboxPool();
  const trialrun = new Map<string, { reference: number | null; start: number | null; note: string }>();
  try {
    const rejectsDir = join(work, 'rejects');
    mkdirSync(rejectsDir, { recursive: true });
    const tasks = await workspaceJobTasks(join(dataset, 'job.yaml'), rejectsDir, 'job file', pool).catch((error: unknown) => {
      throw new Error(`trialrun's task job failed: ${errorMessage(error)}`);
    });
    const rejected = readdirSync(rejectsDir).flatMap((name) => readFileSync(join(rejectsDir, name), 'utf8').trim().split('\n').filter(Boolean));
    for (const line of rejected) {
      const reject = JSON.parse(line) as { taskId?: string; source: string; reason: string };
      trialrun.set(reject.taskId ?? reject.source.split('/').at(-1)!, { reference: null, start: null, note: `rejected: ${reject.reason}` });
    }
    const lookup = { get: (id: string): Task => tasks.find((task) => task.taskId === id) ?? (() => { throw new NotFoundError(`no task ${id}`); })() };
    const verifier = new Verifier({ runId: 'check-harbor', pool, imageFor, tasks: lookup, referenceRuns: 1, timeoutMs: 60_000, trees: null });
    const signal = new AbortController().signal;
    for (const task of tasks) {
      const reference = await verifier.verify(trajectoryOf(task, { ...task.files, ...task.referenceSolution }, 'reference'), signal);
      const start = await verifier.verify(trajectoryOf(task, task.files, 'start'), signal);
      trialrun.set(task.taskId, { reference: reference.score ?? (reference.passed ? 1 : 0), start: start.score ?? (start.passed ? 1 : 0), note: '' });
    }
  } finally {
    await pool.close();
  }
  const trialrunSeconds = (Date.now() - trialrunStarted) / 1000;

  const shown = (value: number | null | undefined, exception?: string | null): string => (exception ? exception : value === null || value === undefined ? '-' : value.toFixed(1));
  const rows: string[] = [];
  const differences: string[] = [];
  for (const id of taskIds) {
    const oracle = harborResults.get('oracle')!.get(id);
    const nop = harborResults.get('nop')!.get(id);
    const ours = trialrun.get(id);
    rows.push(`| ${id} | ${shown(oracle?.reward, oracle?.exception)} | ${shown(nop?.reward, nop?.exception)} | ${shown(ours?.reference)} | ${shown(ours?.start)} |`);
    if (!oracle || oracle.exception || !nop || nop.exception) differences.push(`${id}: a Harbor trial is missing or ended in an exception (oracle ${oracle?.exception ?? (oracle ? 'ok' : 'missing')}, nop ${nop?.exception ?? (nop ? 'ok' : 'missing')})`);
    if (!ours || ours.note) differences.push(`${id}: trialrun has no verdict (${ours?.note ?? 'missing'})`);
    else {
      if (oracle && oracle.reward !== ours.reference) differences.push(`${id}: Harbor oracle ${oracle.reward} != trialrun reference ${ours.reference}`);
      if (nop && nop.reward !== ours.start) differences.push(`${id}: Harbor nop ${nop.reward} != trialrun start ${ours.start}`);
    }
  }
  process.stdout.write(['| task | harbor oracle | harbor nop | trialrun reference | trialrun start |', '| --- | --- | --- | --- | --- |', ...rows].join('\n') + '\n');
  process.stdout.write(
    `\n${taskIds.length} tasks; ${differences.length === 0 ? 'every verdict equal' : `${differences.length} differences`}. ` +
      `Time: ${seconds(started)} in all (set-up of harbor and docker compose ${((readyAt - started) / 1000).toFixed(0)} s, harbor runs ${harborSeconds.toFixed(0)} s, trialrun import + verification ${trialrunSeconds.toFixed(0)} s); harbor's log: ${runLog}\n`,
  );
  for (const difference of differences) process.stdout.write(`DIFFERENT ${difference}\n`);
  return differences.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`check:harbor: ${errorMessage(error)}\n`);
    process.exit(1);
  },
);
