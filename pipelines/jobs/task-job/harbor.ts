import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { limitsForWorkspace, type Sandbox, type SandboxPool } from '../../../connectors/sandbox/index.js';
import { checkoutFile, ConfigError, describeIssues, errorMessage, SandboxError, type FileTree, type Task, type VerificationSpec } from '../../../schemas/index.js';
import { readTree, treeChanges } from './workspace-trees.js';

/**
 * Harbor / Terminal-Bench task folders (`format: harbor` in a workspace job file):
 *   instruction.md          the prompt
 *   task.toml               timeouts and resources ([verifier], [agent], [environment]; checked by HarborConfig)
 *   environment/Dockerfile  the task's image, built FROM a trialrun image; what it puts in its working folder
 *                           (/workspace, the trialrun images' WORKDIR) is what the agent starts from, read out
 *                           of the built image at job time (a sandbox's /workspace is a fresh tmpfs)
 *   tests/test.sh           the verifier: writes /logs/verifier/reward.txt or reward.json, as Harbor reads
 *                           only those; a test.sh that writes neither is rejected at job time, unless the job
 *                           file's `exitStatusReward` (trialrun's own field) asks for its exit status instead
 *   solution/solve.sh       the reference: run over the starting files at job time, what it changes is the
 *                           task's reference solution (what `verify calibrate` verifies)
 * A `workspace/` folder (trialrun's layout before Harbor's) is refused: Harbor never reads it.
 */

/** Where the task's tests, the runner and the verifier's environment go in the grading workspace (hidden files). */
export const HARBOR_DIR = '.harbor';
const RUNNER = 'run-tests.sh';
const SOLVE_DIR = `${HARBOR_DIR}/solution`;
const MAX_FILE_BYTES = 1024 * 1024;

const EnvVars = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a shell variable name'),
  z.string().regex(/^[^\n\0]*$/, 'must hold no newline or NUL'),
);
const Seconds = z.number().positive();
/** `4G`, `512M`, `2048K`: Harbor's older size spelling. */
const Size = z.string().regex(/^\d+(\.\d+)?\s*[KMGT]i?B?$/i, 'must be a size such as "4G" or "512M"');

/**
 * A Harbor field trialrun cannot honour, accepted only at the value that asks for nothing (what `harbor tasks
 * init` writes: an empty list or table, the default mode), refused otherwise with why.
 */
const onlyEmpty = (why: string) =>
  z.unknown().refine((value) => value === undefined || (Array.isArray(value) ? value.length === 0 : typeof value === 'object' && value !== null && Object.keys(value).length === 0), { message: `not honoured by trialrun: ${why}` });
const onlyValue = <T extends string>(allowed: readonly T[], why: string) =>
  z.string().refine((value) => (allowed as readonly string[]).includes(value), { message: `only ${allowed.map((v) => JSON.stringify(v)).join(' or ')}: ${why}` });

/**
 * task.toml as far as trialrun reads it (Harbor 0.25's TaskConfig). Sections it applies are strict: a misspelt
 * limit is an error, not a default, and a Harbor field trialrun cannot honour is refused by name unless it asks
 * for nothing. Accepted but not honoured (docs/tasks.md lists them): `[environment] build_timeout_sec`,
 * `storage_mb` / `storage` (the sandbox's disk is its sized tmpfs), `network_mode = "public"` (Harbor's
 * default: trialrun sandboxes have no network, so a task that needs one fails its tests), `os = "linux"`,
 * and `[agent] timeout_sec` beyond solve.sh's budget (the rollout's own limits bound an agent).
 */
export const HarborConfig = z
  .object({
    version: z.string().optional(),
    schema_version: z.string().optional(),
    source: z.string().optional(),
    /** Free-form in Harbor (name, description, authors, keywords). */
    task: z.object({ name: z.string().optional(), description: z.string().optional(), keywords: z.array(z.string()).optional() }).loose().optional(),
    /** Free-form in Harbor; `tags` (strings) and `category` become task tags. */
    metadata: z.record(z.string(), z.unknown()).optional(),
    artifacts: onlyEmpty('files collected after a trial; trialrun keeps the whole final workspace').optional(),
    steps: onlyEmpty('multi-step tasks; a trialrun task is one episode').optional(),
    multi_step_reward_strategy: onlyEmpty('multi-step tasks; a trialrun task is one episode').optional(),
    verifier: z
      .object({
        /** The test run's budget; at most 600 s (the script verification's cap). */
        timeout_sec: Seconds.max(600).optional(),
        env: EnvVars.optional(),
        environment_mode: onlyValue(['shared'], 'the tests run in a fresh sandbox of the task\'s own image; a separate verifier image (tests/Dockerfile) is not built').optional(),
        collect: onlyEmpty('commands run in other services; a trialrun task has one sandbox').optional(),
        user: onlyEmpty('the tests run as the sandbox user, uid 1000').optional(),
        environment: onlyEmpty('a separate verifier environment').optional(),
      })
      .strict()
      .optional(),
    agent: z.object({ timeout_sec: Seconds.optional(), user: onlyEmpty('the agent runs as the sandbox user, uid 1000').optional() }).strict().optional(),
    environment: z
      .object({
        build_timeout_sec: Seconds.optional(),
        cpus: z.number().positive().max(64).optional(),
        memory_mb: z.number().int().min(16).optional(),
        memory: Size.optional(),
        storage_mb: z.number().int().positive().optional(),
        storage: Size.optional(),
        allow_internet: z.boolean().optional(),
        network_mode: onlyValue(['public', 'no-network'], 'trialrun sandboxes have no network, so an allowlist cannot be honoured').optional(),
        allowed_hosts: onlyEmpty('trialrun sandboxes have no network').optional(),
        gpus: z.number().int().min(0).optional(),
        gpu_types: onlyEmpty('trialrun sandboxes have no GPU').optional(),
        os: onlyValue(['linux'], 'trialrun sandboxes are Linux containers').optional(),
        docker_image: onlyEmpty('a prebuilt image cannot be pulled here; environment/Dockerfile is built FROM a trialrun image').optional(),
        workdir: onlyValue(['/workspace'], 'trialrun sandboxes start in /workspace').optional(),
        env: onlyEmpty('environment variables of the task container are not set in trialrun sandboxes').optional(),
        mcp_servers: onlyEmpty('MCP servers are not started').optional(),
        skills_dir: onlyEmpty('agent skills are not installed').optional(),
        healthcheck: onlyEmpty('the sandbox has no service to wait for').optional(),
        tpu: onlyEmpty('trialrun sandboxes have no TPU').optional(),
      })
      .strict()
      .refine((env) => env.allow_internet !== true, { message: 'allow_internet = true cannot be honoured: trialrun sandboxes have no network', path: ['allow_internet'] })
      .refine((env) => !env.gpus, { message: 'gpus cannot be honoured: trialrun sandboxes have none', path: ['gpus'] })
      .refine((env) => env.memory_mb === undefined || env.memory === undefined, { message: 'give memory_mb or memory, not both', path: ['memory'] })
      .optional(),
    solution: z.object({ env: EnvVars.optional() }).strict().optional(),
  })
  .strict();
export type HarborConfig = z.infer<typeof HarborConfig>;

/** Parses task.toml text; a ConfigError names the file and every bad field. */
export function parseHarborConfig(text: string, file: string): HarborConfig {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    throw new ConfigError(`${file} is not valid TOML: ${errorMessage(error)}`, { cause: error });
  }
  const parsed = HarborConfig.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${file}: ${describeIssues(parsed.error).join('; ')}`);
  return parsed.data;
}

const SIZE_UNITS: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** The sandbox resources a task.toml asks for (cpus, memory); storage is not applied (the sandbox's disk is its sized tmpfs). */
export function harborLimits(config: HarborConfig): Task['limits'] {
  const env = config.environment ?? {};
  const memoryBytes =
    env.memory_mb !== undefined ? env.memory_mb * 1024 * 1024 : env.memory !== undefined ? Math.round(Number(/^[\d.]+/.exec(env.memory)![0]) * SIZE_UNITS[/[KMGT]/i.exec(env.memory)![0].toUpperCase()]!) : undefined;
  if (env.cpus === undefined && memoryBytes === undefined) return undefined;
  return { ...(env.cpus === undefined ? {} : { cpus: env.cpus }), ...(memoryBytes === undefined ? {} : { memoryBytes }) };
}

/** A Harbor folder as read from disk, before its image is built and its solution applied. */
export interface HarborFolder {
  readonly id: string;
  readonly dir: string;
  readonly config: HarborConfig;
  readonly title: string;
  readonly instruction: string;
  readonly tags: string[];
  /** What the grading sandbox adds: tests/ and the runner under .harbor/. */
  readonly hidden: FileTree;
  /** solution/ (solve.sh and anything it uses), or null without solve.sh. */
  readonly solution: FileTree | null;
  /** environment/, which holds the task's Dockerfile: its image recipe and its starting files. */
  readonly environmentDir: string;
  readonly verification: VerificationSpec;
  readonly limits: Task['limits'];
}

const TaskId = /^[a-z0-9][a-z0-9._-]*$/;

export interface HarborReadOptions {
  /**
   * Judge a test.sh that writes no reward file by its exit status (0: reward 1, else 0). Harbor itself never
   * does: such a trial ends in RewardFileNotFoundError, so without this such a task is rejected at job time.
   * The job file's `exitStatusReward`. @default false
   */
  exitStatusReward?: boolean;
}

/** The marker under .harbor/ that tells run-tests.sh to turn the exit status into a reward when none was written. */
const EXIT_STATUS_MARKER = 'reward-from-exit-status';

/** Reads and checks one Harbor task folder; a ConfigError names the file and what is wrong with it. */
export async function readHarborFolder(dir: string, options: HarborReadOptions = {}): Promise<HarborFolder> {
  const id = basename(dir);
  if (!TaskId.test(id)) throw new ConfigError(`${dir}: the folder name is the task id and must be lower-case letters, digits, ".", "_" or "-"`);
  const required = (relative: string): string => {
    const path = join(dir, relative);
    if (!existsSync(path)) throw new ConfigError(`${dir} is not a Harbor task folder: it has no ${relative}`);
    return path;
  };
  const configFile = required('task.toml');
  const instructionFile = required('instruction.md');
  required(join('tests', 'test.sh'));
  required(join('environment', 'Dockerfile'));
  const config = parseHarborConfig(readFileSync(configFile, 'utf8'), configFile);
  const instruction = readFileSync(instructionFile, 'utf8').trim();
  if (instruction === '') throw new ConfigError(`${instructionFile} is empty; it is the task's prompt`);

  const treeOf = async (relative: string, prefix: string): Promise<FileTree> => {
    const tree = await readTree({ folder: join(dir, relative) }, { maxFileBytes: MAX_FILE_BYTES });
    return Object.fromEntries(Object.entries(tree).map(([path, text]) => [`${prefix}${path}`, text]));
  };
  const isFolder = (relative: string): boolean => existsSync(join(dir, relative)) && statSync(join(dir, relative)).isDirectory();
  if (isFolder('workspace')) {
    throw new ConfigError(`${dir} has a workspace/ folder, which Harbor never reads: put the starting files in the task's image (environment/workspace/ and \`COPY --chown=1000:1000 workspace/ /workspace/\` in environment/Dockerfile)`);
  }
  const verifierEnv = Object.entries(config.verifier?.env ?? {}).map(([name, value]) => `${name}=${value}\n`).join('');
  const hidden: FileTree = {
    ...(await treeOf('tests', `${HARBOR_DIR}/tests/`)),
    [`${HARBOR_DIR}/${RUNNER}`]: readFileSync(checkoutFile(`pipelines/jobs/task-job/harbor/${RUNNER}`), 'utf8'),
    ...(verifierEnv === '' ? {} : { [`${HARBOR_DIR}/verifier-env`]: verifierEnv }),
    ...(options.exitStatusReward ? { [`${HARBOR_DIR}/${EXIT_STATUS_MARKER}`]: 'the job file sets exitStatusReward\n' } : {}),
  };
  const hasSolve = existsSync(join(dir, 'solution', 'solve.sh'));
  const metadata = config.metadata ?? {};
  const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : typeof value === 'string' && value !== '' ? [value] : []);
  const heading = /^#\s+(.+)$/m.exec(instruction)?.[1]?.trim();
  return {
    id,
    dir,
    config,
    title: config.task?.name ?? heading ?? id,
    instruction,
    tags: [...new Set(['harbor', ...strings(metadata.category), ...strings(metadata.tags), ...strings(config.task?.keywords)])],
    hidden,
    solution: hasSolve ? await treeOf('solution', `${SOLVE_DIR}/`) : null,
    environmentDir: join(dir, 'environment'),
    verification: {
      check: { kind: 'script', command: ['bash', `${HARBOR_DIR}/${RUNNER}`], ...(config.verifier?.timeout_sec === undefined ? {} : { timeoutMs: Math.max(1000, Math.round(config.verifier.timeout_sec * 1000)) }) },
    },
    limits: harborLimits(config),
  };
}

/** What a Harbor job needs beyond files: the CLI supplies both from stack/ and connectors/sandbox. */
export interface HarborHooks {
  /** The tag of a task's environment/ image, built when missing (stack's taskImagePlan + ensureTaskImage). */
  readonly buildImage: (environmentDir: string, taskId: string) => Promise<string>;
  /** The files an image holds in its working folder (/workspace): a Harbor task's starting files (stack's imageWorkdirTree). */
  readonly imageFiles: (image: string) => Promise<FileTree>;
  /** Sandboxes in which solution/solve.sh runs over the starting files. */
  readonly pool: SandboxPool;
  /** A recipe name or tag to the image to run (stack's imageFor). */
  readonly imageFor: (recipe: string) => string;
  /** Lineage label of the solve sandboxes. */
  readonly runId: string;
}

/** solve.sh's budget when the task.toml gives no agent timeout. */
const SOLVE_TIMEOUT_MS = 300_000;

/**
 * Runs solution/solve.sh (from /workspace, with [solution].env) in a fresh sandbox of the task's image over its
 * starting files; the files it adds or changes are the reference solution. A solve.sh that fails, or that deletes
 * files or makes links (which a reference laid over the starting files cannot express), is a ConfigError. Then
 * the task's tests run over that reference in the same sandbox, which must leave a reward file (requireRewardFile).
 */
export async function applySolveScript(folder: HarborFolder, files: FileTree, image: string, hooks: HarborHooks): Promise<FileTree> {
  if (folder.solution === null) throw new ConfigError(`${folder.dir} has no solution/solve.sh`);
  const sandbox = await hooks.pool.acquire({ image: hooks.imageFor(image), runId: hooks.runId, taskId: folder.id, limits: limitsForWorkspace(0, folder.limits) });
  try {
    await sandbox.writeFiles({ ...files, ...folder.solution });
    const agentSeconds = folder.config.agent?.timeout_sec;
    const timeoutMs = Math.min(600_000, agentSeconds === undefined ? SOLVE_TIMEOUT_MS : Math.round(agentSeconds * 1000));
    const exec = await sandbox.exec(['bash', `${SOLVE_DIR}/solve.sh`], { timeoutMs, env: folder.config.solution?.env ?? {}, maxOutputBytes: 64 * 1024 });
    const where = join(folder.dir, 'solution', 'solve.sh');
    if (exec.status !== 'exited' || exec.exitCode !== 0) {
      throw new ConfigError(`${where} failed (${exec.status}${exec.exitCode === null ? '' : `, exit ${exec.exitCode}`}): ${exec.stderr.trim().slice(-400) || 'no stderr'}`);
    }
    const after = await sandbox.snapshot();
    const { changed, deleted } = treeChanges(files, Object.fromEntries(Object.entries(after.files).filter(([path]) => !path.startsWith(`${HARBOR_DIR}/`))));
    const links = after.extras.symlinks.map((link) => link.path);
    const problems = [
      ...(deleted.length ? [`it deletes ${deleted.slice(0, 5).join(', ')}`] : []),
      ...(links.length ? [`it makes links (${links.slice(0, 5).join(', ')})`] : []),
      ...(after.extras.escapedPaths.length ? [`it makes names that are not UTF-8`] : []),
      ...(after.skipped.length ? [`it leaves what a task tree cannot carry (${after.skipped.slice(0, 5).map((s) => `${s.path}: ${s.reason}`).join('; ')})`] : []),
    ];
    if (problems.length) throw new ConfigError(`${where}: ${problems.join('; ')}; a reference solution can only add or change text files`);
    if (Object.keys(changed).length === 0) throw new ConfigError(`${where} changes no file of the workspace`);
    await runTestsForReward(folder, sandbox, 'the reference solution');
    return changed;
  } finally {
    await sandbox.release();
  }
}

/**
 * Runs the task's tests over its starting files in a fresh sandbox of its image: they must write a reward file
 * there too (a do-nothing agent's trial), else Harbor would end that trial in RewardFileNotFoundError.
 */
export async function requireRewardFile(folder: HarborFolder, files: FileTree, image: string, hooks: HarborHooks): Promise<void> {
  const sandbox = await hooks.pool.acquire({ image: hooks.imageFor(image), runId: hooks.runId, taskId: folder.id, limits: limitsForWorkspace(0, folder.limits) });
  try {
    await sandbox.writeFiles(files);
    await runTestsForReward(folder, sandbox, 'the starting files');
  } finally {
    await sandbox.release();
  }
}

/** Where the job-time test run leaves its reward (the verifier's TRIALRUN_REWARD_DIR, in the sandbox's /tmp). */
const PROBE_REWARD_DIR = '/tmp/trialrun-reward-probe';

async function runTestsForReward(folder: HarborFolder, sandbox: Sandbox, over: string): Promise<void> {
  await sandbox.writeFiles(folder.hidden);
  const timeoutMs = folder.config.verifier?.timeout_sec === undefined ? 600_000 : Math.max(1000, Math.round(folder.config.verifier.timeout_sec * 1000));
  const run = await sandbox.exec(['bash', `${HARBOR_DIR}/${RUNNER}`], { timeoutMs, env: { TRIALRUN_REWARD_DIR: PROBE_REWARD_DIR }, maxOutputBytes: 64 * 1024 });
  // A loaded machine can take seconds to start even `ls`: a slow answer is not a missing reward.
  const listed = await sandbox.exec(['ls', '-A', PROBE_REWARD_DIR], { timeoutMs: 60_000 });
  if (listed.status !== 'exited') throw new SandboxError(`listing ${PROBE_REWARD_DIR} in a sandbox failed (${listed.status}): ${listed.stderr.trim() || 'no output'}`, { retriable: true });
  const written = listed.stdout.split('\n').filter((name) => name === 'reward.txt' || name === 'reward.json');
  if (written.length === 0) {
    const how = `${run.status === 'exited' ? `exit ${run.exitCode}` : run.status}${run.stderr.trim() ? `; stderr ends: ${run.stderr.trim().slice(-300)}` : ''}`;
    throw new ConfigError(
      `${join(folder.dir, 'tests', 'test.sh')} wrote neither /logs/verifier/reward.txt nor reward.json over ${over} (${how}): Harbor reads the reward only from those and ends such a trial in RewardFileNotFoundError; write one in every outcome, or set \`exitStatusReward: true\` in the job file (trialrun only) to judge its exit status`,
    );
  }
}
