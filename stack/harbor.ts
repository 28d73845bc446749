import { execFile } from 'node:child_process';
import { existsSync, readdirSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError } from '../schemas/index.js';
import type { StackLog } from './component.js';
import { runCommand } from './process.js';
import { ensureDir, stackPaths } from './state.js';
import { cachedVenv } from './venv.js';

const run = promisify(execFile);

/**
 * What the Harbor cross-check (`npm run check:harbor`) runs: the `harbor` package from PyPI, in a virtualenv of
 * its own under the cache, and the docker compose v2 CLI plugin its docker environment drives. Debian bookworm
 * ships only docker-compose 1.29, so the plugin is built once from its Go module (the Go module proxy serves
 * it) with the Go toolchain and kept under the cache, in a Docker CLI config folder of its own: the check
 * points DOCKER_CONFIG at that folder for Harbor's processes, and nothing outside the cache changes.
 */
export const HARBOR_VERSION = '0.25.0';
export const COMPOSE_MODULE = 'github.com/docker/compose/v2';
export const COMPOSE_VERSION = 'v2.40.3';
/** harbor requires Python >= 3.12. */
const PYTHON_MINIMUM: readonly [number, number] = [3, 12];

async function pythonVersion(python: string): Promise<[number, number] | null> {
  try {
    const { stdout, stderr } = await run(python, ['--version']);
    const match = /Python (\d+)\.(\d+)/.exec(`${stdout}${stderr}`);
    return match ? [Number(match[1]), Number(match[2])] : null;
  } catch {
    return null;
  }
}

const atLeast = (version: readonly [number, number], minimum: readonly [number, number]): boolean => version[0] > minimum[0] || (version[0] === minimum[0] && version[1] >= minimum[1]);

/**
 * A Python >= 3.12 to make harbor's virtualenv with: `TRIALRUN_HARBOR_PYTHON` when set (it must qualify), else
 * python3.12 / python3.13 / python3 on PATH, else the newest qualifying pyenv version
 * (`$PYENV_ROOT/versions`, default ~/.pyenv), which is where this machine kind keeps its 3.12.
 */
export async function findHarborPython(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const wanted = `Python >= ${PYTHON_MINIMUM.join('.')}`;
  if (env.TRIALRUN_HARBOR_PYTHON) {
    const version = await pythonVersion(env.TRIALRUN_HARBOR_PYTHON);
    if (version && atLeast(version, PYTHON_MINIMUM)) return env.TRIALRUN_HARBOR_PYTHON;
    throw new ConfigError(`TRIALRUN_HARBOR_PYTHON=${env.TRIALRUN_HARBOR_PYTHON} is not ${wanted} (harbor ${HARBOR_VERSION} needs it)`);
  }
  const onPath = ['python3.13', 'python3.12', 'python3'].flatMap((name) => (env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, name)));
  const pyenvRoot = env.PYENV_ROOT ?? join(homedir(), '.pyenv');
  const pyenvVersions = existsSync(join(pyenvRoot, 'versions'))
    ? readdirSync(join(pyenvRoot, 'versions'))
        .filter((name) => /^\d+\.\d+(\.\d+)?$/.test(name))
        .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))
        .map((name) => join(pyenvRoot, 'versions', name, 'bin', 'python3'))
    : [];
  for (const candidate of [...onPath, ...pyenvVersions]) {
    if (!existsSync(candidate)) continue;
    const version = await pythonVersion(candidate);
    if (version && atLeast(version, PYTHON_MINIMUM)) return candidate;
  }
  throw new ConfigError(`harbor ${HARBOR_VERSION} needs ${wanted}, and none was found on PATH or under ${pyenvRoot}/versions; install one (pyenv install 3.12) or set TRIALRUN_HARBOR_PYTHON`);
}

/**
 * The python of `<cacheDir>/harbor-<version>-venv`, installed once (~5 minutes fresh: its runner's dependencies); an
 * incomplete one is rebuilt. Its harbor runs the Harbor cross-check (`npm run check:harbor`).
 */
export async function harborPython(log: StackLog, options: { cacheDir?: string; logFile: string }): Promise<string> {
  const dir = join(options.cacheDir ?? stackPaths().cacheDir, `harbor-${HARBOR_VERSION}-venv`);
  const python = await findHarborPython();
  return cachedVenv(
    { dir, installs: [[`harbor==${HARBOR_VERSION}`]], check: 'import harbor.cli.main, harbor.models.trajectories', what: `harbor ${HARBOR_VERSION} (its runner and ATIF models)` },
    python,
    options.logFile,
    log,
  );
}

/** The pydantic harbor's METADATA asks for (`pydantic>=2.12.0`); the ATIF models need nothing else of its dependencies. */
const HARBOR_PYDANTIC = 'pydantic>=2.12.0';

/**
 * The python of `<cacheDir>/harbor-models-<version>-venv`: harbor's package without its runner's dependencies, and
 * pydantic, which is all its ATIF models (`harbor.models.trajectories`, `harbor.utils.trajectory_validator`) import.
 * Seconds to install where the whole package takes minutes, so the test command can afford harbor's own verdict on
 * `export atif`.
 */
export async function harborModelsPython(log: StackLog, options: { cacheDir?: string; logFile: string }): Promise<string> {
  const dir = join(options.cacheDir ?? stackPaths().cacheDir, `harbor-models-${HARBOR_VERSION}-venv`);
  const python = await findHarborPython();
  return cachedVenv(
    {
      dir,
      installs: [['--no-deps', `harbor==${HARBOR_VERSION}`], [HARBOR_PYDANTIC]],
      check: 'import harbor.models.trajectories, harbor.utils.trajectory_validator',
      what: `harbor ${HARBOR_VERSION}'s ATIF models (no runner)`,
    },
    python,
    options.logFile,
    log,
  );
}

/** The `harbor` command of harbor's virtualenv (`harborPython`). */
export async function harborCommand(log: StackLog, options: { cacheDir?: string; logFile: string }): Promise<string> {
  return join(dirname(await harborPython(log, options)), 'harbor');
}

/** The Go toolchain: `go` on PATH, else the official tarball's /usr/local/go. */
function findGo(env: NodeJS.ProcessEnv): string {
  const candidates = [...(env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'go')), '/usr/local/go/bin/go'];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new ConfigError(`building the docker compose plugin needs the Go toolchain (go >= 1.21, which fetches the version ${COMPOSE_MODULE} asks for through the Go module proxy); none on PATH or in /usr/local/go`);
  return found;
}

/**
 * A Docker CLI config folder whose cli-plugins/ holds docker compose `COMPOSE_VERSION`, built from its Go module
 * the first time (a few minutes: the module and its dependencies come through the Go module proxy). Point
 * DOCKER_CONFIG at it to give `docker compose` to one process tree.
 */
export async function composeDockerConfig(log: StackLog, options: { cacheDir?: string; logFile: string; env?: NodeJS.ProcessEnv }): Promise<string> {
  const env = options.env ?? process.env;
  const configDir = join(options.cacheDir ?? stackPaths().cacheDir, `docker-compose-${COMPOSE_VERSION}`);
  const plugin = join(configDir, 'cli-plugins', 'docker-compose');
  if (existsSync(plugin)) return configDir;
  const go = findGo(env);
  ensureDir(join(configDir, 'cli-plugins'));
  const started = Date.now();
  log(`building the docker compose plugin ${COMPOSE_VERSION} from ${COMPOSE_MODULE} into ${plugin} (once)`);
  // The module cache is read-only, so the build reads the module where `go mod download` put it.
  const goEnv = { ...env, GOFLAGS: '-buildvcs=false', GOTOOLCHAIN: env.GOTOOLCHAIN ?? 'auto' };
  const { stdout } = await run(go, ['mod', 'download', '-json', `${COMPOSE_MODULE}@${COMPOSE_VERSION}`], { env: goEnv, maxBuffer: 1024 * 1024 });
  const moduleDir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!moduleDir) throw new Error(`go mod download ${COMPOSE_MODULE}@${COMPOSE_VERSION} named no folder: ${stdout.slice(0, 400)}`);
  const partial = `${plugin}.partial`;
  await runCommand(go, ['build', '-trimpath', '-ldflags', `-s -w -X ${COMPOSE_MODULE}/internal.Version=${COMPOSE_VERSION}`, '-o', partial, './cmd'], { logFile: options.logFile, env: goEnv, cwd: moduleDir });
  renameSync(partial, plugin);
  log(`built the docker compose plugin in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return configDir;
}
