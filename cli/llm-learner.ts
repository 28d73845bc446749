import { spawn, type ChildProcess, type IOType, type SpawnOptions } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { openCheckpointStore, serveCheckpointChannel } from '../connectors/checkpoints/index.js';
import { resolveKafkaOptions } from '../connectors/kafka/index.js';
import { resolveRegistryUrl } from '../connectors/registry/index.js';
import { servedModelPath } from '../connectors/llm/index.js';
import type { ExternalLearner } from '../pipelines/loop/index.js';
import { llmPolicyKind, type ResolvedLlmPolicyOptions } from '../policies/index.js';
import { checkoutFile, ConfigError, errorMessage, isS3Url, parseS3Url, ProcessExitError, STACK_LLM_URL } from '../schemas/index.js';
import { childExit, llmLearnerPython, llmLearnerVenvDir, llmThreadShare, stackPaths, stopChild } from '../stack/index.js';
import { topicNamesFromEnv } from './context.js';
import { checkpointsLocation } from './paths.js';

/** What `trialrun run llm-learner` hands the Python learner (llm-learner/README.md lists every flag it takes). */
export interface LlmLearnerLaunch {
  /** The GGUF the model server serves. */
  readonly gguf: string;
  /**
   * The checkpoint store: a local folder the learner writes itself, or an `s3://` location, which the learner reaches
   * only through this process (the checkpoint channel, `spawnWithCheckpointChannel`).
   */
  readonly checkpoints: string;
  readonly brokers: readonly string[];
  readonly registryUrl: string;
  readonly topicPrefix: string;
  readonly runId: string;
  readonly batchSize: number;
  readonly sessionTimeoutMs: number;
  /** Further learner flags, passed verbatim (`trialrun run llm-learner -- --kl-coef 0.05`). */
  readonly extraArgs: readonly string[];
}

/** The descriptor on which a learner spawned with `spawnWithCheckpointChannel` finds its checkpoint channel. */
export const CHECKPOINT_CHANNEL_FD = 3;

/** The learner's command line after the python: the stack's endpoints and names first, the caller's flags last. */
export function llmLearnerArgs(launch: LlmLearnerLaunch): string[] {
  return [
    '-m', 'trialrun_llm_learner',
    '--gguf', launch.gguf,
    '--checkpoints', launch.checkpoints,
    ...(isS3Url(launch.checkpoints) ? ['--checkpoint-channel-fd', String(CHECKPOINT_CHANNEL_FD)] : []),
    '--brokers', launch.brokers.join(','),
    '--registry-url', launch.registryUrl,
    '--topic-prefix', launch.topicPrefix,
    '--run-id', launch.runId,
    '--batch-size', String(launch.batchSize),
    '--session-timeout-ms', String(launch.sessionTimeoutMs),
    ...launch.extraArgs,
  ];
}

/**
 * The checkpoint store as the Python learner is told it: a local folder (a `file:` URI as its path), which it writes
 * itself, or an `s3://` location (checked here), which it reaches through the checkpoint channel. Any other scheme
 * is refused by name.
 */
export function learnerCheckpoints(location: string, option = 'TRIALRUN_CHECKPOINTS'): string {
  if (isS3Url(location)) {
    parseS3Url(location, option);
    return location;
  }
  if (location.startsWith('file:')) return fileURLToPath(location);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) throw new ConfigError(`${option}: no store for "${location.split(':')[0]}://" locations (s3:// and local folders are)`);
  return location;
}

/**
 * Spawns a learner process (`python args`) for the checkpoint store `checkpoints`. For an `s3://` store, the store is
 * opened and checked first (a missing bucket or refused credentials is one ConfigError, before the learner starts),
 * and the child gets a socket on descriptor CHECKPOINT_CHANNEL_FD over which this process publishes and reads its
 * artifacts through that store (connectors/checkpoints/channel.ts), until the child exits. A local folder needs neither.
 */
export async function spawnWithCheckpointChannel(python: string, args: readonly string[], checkpoints: string, options: SpawnOptions & { stdio: IOType | Array<IOType | number> }): Promise<ChildProcess> {
  if (!isS3Url(checkpoints)) return spawn(python, args, options);
  const store = openCheckpointStore(checkpoints);
  try {
    await store.check();
  } catch (error) {
    store.close();
    throw error;
  }
  const stdio = typeof options.stdio === 'string' ? [options.stdio, options.stdio, options.stdio] : [...options.stdio];
  while (stdio.length < CHECKPOINT_CHANNEL_FD) stdio.push('ignore');
  stdio[CHECKPOINT_CHANNEL_FD] = 'pipe';
  const child = spawn(python, args, { ...options, stdio });
  const channel = child.stdio[CHECKPOINT_CHANNEL_FD] as Duplex | null;
  // An exit, or a spawn that failed (no 'exit' follows), ends the channel, even if a grandchild that inherited the
  // socket still holds it open; the store is closed once the request in hand, if any, is answered.
  const gone = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  void gone.then(() => channel?.destroy());
  void Promise.all([channel ? serveCheckpointChannel(channel, store) : undefined, gone]).finally(() => store.close());
  return child;
}

/** The GGUF file the llama.cpp server at `rootUrl` serves (its /props `model_path`), so the learner trains those weights. */
export async function servedGguf(rootUrl: string): Promise<string> {
  const path = await servedModelPath(rootUrl).catch((error: unknown) => {
    throw new ConfigError(`cannot ask the model server at ${rootUrl} which GGUF it serves (${errorMessage(error)}); start it with \`trialrun stack up --llm\` or name the file with --gguf`);
  });
  if (path === null) throw new ConfigError(`the model server at ${rootUrl} names no model_path in /props (not llama.cpp?); name the GGUF with --gguf`);
  if (!existsSync(path)) throw new ConfigError(`the model server at ${rootUrl} serves ${path}, which is not a file on this machine; name the GGUF with --gguf`);
  return path;
}

/** The root of the stack's model server (LLM_BASE_URL, else the built-in one), without its OpenAI `/v1`. */
export const llmServerRoot = (env: NodeJS.ProcessEnv = process.env): string => (env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '').replace(/\/v1$/, '');

/** The learner's launch settings from the environment, as the TypeScript processors resolve theirs. */
export function llmLearnerLaunch(options: { gguf: string; runId: string; batchSize: number; sessionTimeoutMs: number; extraArgs: readonly string[] }, env: NodeJS.ProcessEnv = process.env): LlmLearnerLaunch {
  return {
    ...options,
    checkpoints: learnerCheckpoints(checkpointsLocation(env)),
    brokers: resolveKafkaOptions({}, env).brokers,
    registryUrl: resolveRegistryUrl({}, env),
    topicPrefix: topicNamesFromEnv(env).prefix,
  };
}

/** Whether the learner's virtualenv is there (`trialrun stack python llm-learner` installs it, ~5.7 GB). */
export const llmLearnerInstalled = (): boolean => existsSync(join(llmLearnerVenvDir(), 'bin', 'python'));

/** The learner's virtualenv python, installed once (see stack/llm-learner.ts). */
export function llmLearnerVenv(): Promise<string> {
  return llmLearnerPython((line) => void process.stderr.write(`${line}\n`), { logFile: join(stackPaths().stateDir, 'logs', 'setup-llm-learner.log') });
}

/** The Python learner's process, run from its package folder, which is its import path. */
function spawnLlmLearner(python: string, launch: LlmLearnerLaunch, stdio: IOType | Array<IOType | number>): Promise<ChildProcess> {
  const folder = checkoutFile('llm-learner');
  return spawnWithCheckpointChannel(python, llmLearnerArgs(launch), launch.checkpoints, { cwd: folder, env: { ...process.env, PYTHONPATH: folder, PYTHONUNBUFFERED: '1' }, stdio });
}

/**
 * How long a learner asked to stop may take before it is killed. SIGTERM lets it finish the update in hand and
 * commit (an update of a large batch on CPU takes minutes); a learner still running this long after is stuck
 * where it never reads the flag SIGTERM sets.
 */
export const LLM_LEARNER_STOP_GRACE_MS = 600_000;

/**
 * Runs the Python learner until it exits. The first SIGINT or SIGTERM asks it to stop (it finishes the update
 * in hand, commits, and exits; SIGKILL after LLM_LEARNER_STOP_GRACE_MS), a second kills it. Resolves with its
 * exit status (128 + signal number when a signal ended it).
 */
export async function runLlmLearner(python: string, launch: LlmLearnerLaunch): Promise<number> {
  const child = await spawnLlmLearner(python, launch, 'inherit');
  let stopping = false;
  const forward = (): void => {
    if (stopping) child.kill('SIGKILL');
    else void stopChild(child, { graceMs: LLM_LEARNER_STOP_GRACE_MS });
    stopping = true;
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', (error) => reject(new ConfigError(`cannot start the LLM learner with ${python}: ${error.message}`)));
      void childExit(child).then(resolve);
    });
  } finally {
    process.off('SIGINT', forward);
    process.off('SIGTERM', forward);
  }
}

/**
 * The Python learner as a loop's external learner: one process on `launch`'s topics and checkpoint folder,
 * its output appended to `logFile`, which every error about it names. `stop` kills it if it still runs
 * `stopGraceMs` after SIGTERM.
 */
export function llmLearnerProcess(python: string, launch: LlmLearnerLaunch, logFile: string, stopGraceMs = LLM_LEARNER_STOP_GRACE_MS): ExternalLearner {
  let child: ChildProcess | null = null;
  let stopping = false;
  let failure: Error | null = null;
  return {
    // The group the learner names itself (LearnerOptions.consumer_group).
    groupId: `${launch.topicPrefix}llm-learner`,
    async start() {
      mkdirSync(dirname(logFile), { recursive: true });
      const log = openSync(logFile, 'a');
      try {
        child = await spawnLlmLearner(python, launch, ['ignore', log, log]);
      } finally {
        closeSync(log);
      }
      const started = child;
      void childExit(started).then((status) => {
        if (!stopping) failure = new ProcessExitError(`the LLM learner exited with status ${status} while the loop ran; its log: ${logFile}`);
      });
      await new Promise<void>((resolve, reject) => {
        started.once('spawn', resolve);
        started.once('error', (error) => reject(new ConfigError(`cannot start the LLM learner with ${python}: ${error.message}`)));
      });
    },
    failure: () => failure,
    async stop() {
      if (child === null) return;
      stopping = true;
      // SIGTERM: it finishes the update in hand, commits, and exits 0.
      const status = await stopChild(child, { graceMs: stopGraceMs });
      if (failure) throw failure;
      // 137: SIGKILL, from stopChild once the grace had passed (or from the system, out of memory).
      const killed = status === 137 ? ` (killed: still running ${stopGraceMs / 1000} s after SIGTERM, or by the system)` : '';
      if (status !== 0) throw new ProcessExitError(`the LLM learner exited with status ${status} when asked to stop${killed}; its log: ${logFile}`);
    },
  };
}

/** The loop's learner flags for the llm policy rolled out, the caller's `extraArgs` last (given later, they win). */
export function loopLearnerFlags(policy: ResolvedLlmPolicyOptions, extraArgs: readonly string[]): string[] {
  return [
    // The loop's learner shares the machine with the model server: each takes half the cores.
    '--threads', String(llmThreadShare()),
    // No sample is longer than an episode may grow, so none is cut: the learner's own default (1024) cut the
    // sampled tokens off every repair-script sample, whose first prompt alone is about 1100 tokens.
    '--max-sequence-tokens', String(policy.maxEpisodeTokens),
    // The engine records each token's logprob under logits / temperature (the distribution it was drawn from): the
    // learner's ratio divides its logits by the same temperature, so an unchanged adapter's ratio is 1 (on-policy).
    ...(policy.temperature > 0 ? ['--temperature', String(policy.temperature)] : []),
    // The kind's earlier decisions failed (the repair script's undone edits): the learner credits them so.
    ...(llmPolicyKind(policy).earlierDecisionsFailed === true ? ['--earlier-turns-failed'] : []),
    ...extraArgs,
  ];
}

/**
 * The external learner of a loop run (`learn`, `demo`) with the llm policy: the Python learner on `topicPrefix` and
 * the checkpoint folder `checkpoints`, training the GGUF the stack's model server serves, its log under the state folder.
 */
export async function loopLlmLearner(options: {
  runId: string;
  topicPrefix: string;
  checkpoints: string;
  batchSize: number;
  /** The llm policy rolled out, whose turns the learner trains on. */
  policy: ResolvedLlmPolicyOptions;
  extraArgs: readonly string[];
}): Promise<ExternalLearner> {
  const python = await llmLearnerVenv();
  const extraArgs = loopLearnerFlags(options.policy, options.extraArgs);
  const launch: LlmLearnerLaunch = {
    ...llmLearnerLaunch({ gguf: await servedGguf(llmServerRoot()), runId: options.runId, batchSize: options.batchSize, sessionTimeoutMs: 10_000, extraArgs }),
    topicPrefix: options.topicPrefix,
    checkpoints: learnerCheckpoints(options.checkpoints),
  };
  return llmLearnerProcess(python, launch, join(stackPaths().stateDir, 'logs', `llm-learner-${options.runId}.log`));
}
