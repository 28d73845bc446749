import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, createReadStream, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { checkoutFile, ConfigError, SandboxError } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { aptInstall, dockerClient, findExecutable, pingDocker, requireRoot } from './docker.js';
import { logHint, runCommand } from './process.js';
import { ensureDir, setupLogFile, stackPaths } from './state.js';

/**
 * Sandbox images are built from recipe folders under `sandbox-images/`, one per image:
 * - a root-filesystem recipe holds `build-rootfs.sh` (+ `packages.txt`): debootstrapped, tarred, `docker import`-ed;
 * - a Dockerfile recipe names each trialrun parent in an `ARG X=trialrun/<name>` before `FROM ${X}`; the ARG is
 *   set to the parent's hashed tag at build time, so parents build first and a parent change rebuilds children.
 * Tags are `trialrun/<name>:<12 hex>` over the recipe's files and its parents' tags: an unchanged recipe is
 * never rebuilt, a changed one always is.
 * Builds have no network, except that of a Dockerfile recipe holding `packages.txt` (Debian packages its
 * Dockerfile installs with apt), which reaches the host's network for the Debian mirror. A recipe holding
 * `requirements.txt` gets those Python packages as wheels, downloaded on the host with pip into the cache
 * (`<cache>/wheels/<recipe>-<hash of requirements.txt>`, once) and put in its build context's `wheels/`; its build stays offline.
 * Task images (a Harbor task's `environment/` folder) are Dockerfile recipes outside this folder whose parent
 * must be one of these recipes (`taskImagePlan`): nothing can be pulled, so `FROM ubuntu` is refused.
 */

const ROOTFS_SCRIPT = 'build-rootfs.sh';
const PACKAGES_FILE = 'packages.txt';
/** A Dockerfile recipe's Python packages: downloaded as wheels on the host, handed to its build in `wheels/`. */
const REQUIREMENTS_FILE = 'requirements.txt';
/** The sandbox images' interpreter (Debian bookworm's python3) and platforms, for which wheels are downloaded. */
const IMAGE_PYTHON = ['--python-version', '3.11', '--implementation', 'cp', '--platform', 'manylinux_2_28_x86_64', '--platform', 'manylinux_2_17_x86_64', '--platform', 'manylinux2014_x86_64', '--platform', 'linux_x86_64'];
const PARENT_ARG = /^ARG\s+([A-Za-z_]\w*)=["']?trialrun\/([a-z0-9][a-z0-9._-]*?)(?::latest)?["']?\s*$/;
// Docker supplies a default PATH at run time, but `docker build` RUN steps and `exec` want it in the image too.
const ROOTFS_IMAGE_CHANGES = ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'ENV LANG=C.UTF-8'];

export interface ImagesOptions {
  /** Folder with one sub-folder per image recipe. @default `<repo root>/sandbox-images` */
  recipesDir?: string;
  /** Bootstrapped root-filesystem tarballs, keyed by recipe hash. @default `<stackPaths().cacheDir>/rootfs` */
  rootfsCacheDir?: string;
  /** Engine to build on. @default `dockerClient()` (env DOCKER_HOST, else the local socket) */
  docker?: Docker;
  /** Where the output of debootstrap, apt and image builds goes. @default `setupLogFile(stackPaths().stateDir, 'sandbox-images')` */
  setupLog?: string;
  /**
   * An engine that has the images already (the first of several local engines): missing ones are copied from it
   * (`docker save | docker load`) instead of built, so every engine runs the very same image digests.
   * @default none: missing images are built on `docker`
   */
  copyFrom?: Docker;
  /** The component's name (`stack status`). @default 'sandbox-images' */
  name?: string;
}

interface Recipe {
  readonly name: string;
  readonly dir: string;
  readonly kind: 'rootfs' | 'dockerfile';
  /** Dockerfile ARG name -> parent recipe name. */
  readonly parents: ReadonlyMap<string, string>;
  /** The ARG the first FROM names (`FROM ${X}`), if it names one. */
  readonly fromArg: string | null;
  /** The build reaches the network (a Dockerfile recipe with packages.txt installs them from the Debian mirror). */
  readonly network: boolean;
}

/** The tag `name`'s recipe builds to, e.g. `trialrun/python-repair:0123456789ab`. Reads files only, never Docker. */
export function resolveImageTag(name: string, recipesDir: string = checkoutFile('sandbox-images')): string {
  const planned = planImages(recipesDir, [name]).find((p) => p.recipe.name === name);
  if (planned === undefined) throw new ConfigError(`no sandbox image recipe ${name} in ${recipesDir}`);
  return planned.tag;
}

/** A task's own image recipe (a Harbor task's `environment/` folder), planned against the sandbox recipes. */
export interface TaskImagePlan {
  /** `trialrun/task-<name>:<12 hex>` over the folder's files and the parent's tag. */
  readonly tag: string;
  readonly contextDir: string;
  /** The trialrun recipe it is built FROM, e.g. `ops`. */
  readonly parent: string;
  readonly parentTag: string;
  /** The Dockerfile ARG naming the parent, set to `parentTag` at build time. */
  readonly parentArg: string;
}

/**
 * Plans a task image: its Dockerfile must name one trialrun recipe through an ARG before its first FROM
 * (`ARG BASE_IMAGE=trialrun/ops`, `FROM ${BASE_IMAGE}`), since nothing can be pulled here; any other FROM is a
 * ConfigError naming the recipes that may be used. Reads files only, never Docker.
 */
export function taskImagePlan(contextDir: string, name: string, recipesDir: string = checkoutFile('sandbox-images')): TaskImagePlan {
  const dockerfile = join(contextDir, 'Dockerfile');
  if (!existsSync(dockerfile)) throw new ConfigError(`${contextDir} has no Dockerfile`);
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(name)) throw new ConfigError(`task image name ${JSON.stringify(name)} must be lower-case letters, digits, ".", "_" or "-"`);
  const bases = readdirSync(recipesDir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
  const allowed = `trialrun/${bases.join(', trialrun/')}`;
  const refuse = (why: string): never => {
    throw new ConfigError(`${dockerfile}: ${why}; a task image is built FROM one of the trialrun images (${allowed}), since nothing can be pulled here: write \`ARG BASE_IMAGE=trialrun/ops\` then \`FROM \${BASE_IMAGE}\``);
  };
  const recipe = readDockerfileRecipe(`task-${name}`, contextDir);
  const parent = recipe.fromArg === null ? undefined : recipe.parents.get(recipe.fromArg);
  if (parent === undefined) {
    const from = readFileSync(dockerfile, 'utf8').split('\n').map((line) => line.trim()).find((line) => /^FROM\s/i.test(line));
    return refuse(from === undefined ? 'it has no FROM line' : `\`${from}\` does not name a trialrun image through an ARG`);
  }
  if (recipe.parents.size !== 1) return refuse(`it names ${recipe.parents.size} trialrun parents (${[...recipe.parents.values()].join(', ')}); a task image has one`);
  if (!bases.includes(parent)) return refuse(`trialrun/${parent} is not a sandbox image recipe`);
  const parentTag = resolveImageTag(parent, recipesDir);
  return { tag: `trialrun/task-${name}:${recipeHash(contextDir, [parentTag])}`, contextDir, parent, parentTag, parentArg: recipe.fromArg! };
}

export interface TaskImageBuildOptions {
  /** @default `dockerClient()` */
  docker?: Docker;
  /** @default `setupLogFile(stackPaths().stateDir, 'sandbox-images')` */
  setupLog?: string;
  /** @default none */
  log?: StackLog;
}

/** Builds a planned task image unless its tag exists (an unchanged folder is never rebuilt); returns the tag. */
export async function ensureTaskImage(plan: TaskImagePlan, options: TaskImageBuildOptions = {}): Promise<string> {
  const docker = options.docker ?? dockerClient();
  const present = (tag: string): Promise<boolean> => docker.getImage(tag).inspect().then(() => true, () => false);
  if (await present(plan.tag)) return plan.tag;
  if (!(await present(plan.parentTag))) throw new ConfigError(`the task image ${plan.tag} is built FROM ${plan.parentTag}, which is not built: run \`trialrun stack up\``);
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  // Task images build without network: what they need beyond their parent comes from their own folder.
  const recipe: Recipe = { name: `task-${plan.tag}`, dir: plan.contextDir, kind: 'dockerfile', parents: new Map([[plan.parentArg, plan.parent]]), fromArg: plan.parentArg, network: false };
  // A failing step is the folder's fault (a COPY of a missing file, a RUN that needs the network): the task is
  // rejected with it. An engine that does not answer stays a SandboxError.
  const stepFailed = (message: string): Error => new ConfigError(`building the task image ${plan.tag} from ${plan.contextDir} failed: ${message}`);
  await buildDockerfile(docker, recipe, plan.tag, { [plan.parentArg]: plan.parentTag }, options.setupLog ?? setupLogFile(stackPaths().stateDir, 'sandbox-images'), log, stepFailed);
  log(`built ${plan.tag} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return plan.tag;
}

interface PlannedImage {
  readonly recipe: Recipe;
  readonly tag: string;
  /** Parent tags for the Dockerfile's ARGs. */
  readonly buildargs: Record<string, string>;
}

/** `names` and their trialrun parents, parents first, each with its tag. */
function planImages(recipesDir: string, names: readonly string[]): PlannedImage[] {
  const plan: PlannedImage[] = [];
  const visit = (name: string, path: readonly string[]): string => {
    const done = plan.find((p) => p.recipe.name === name);
    if (done !== undefined) return done.tag;
    if (path.includes(name)) throw new ConfigError(`sandbox image recipes form a cycle: ${[...path, name].join(' -> ')}`);

    const recipe = readRecipe(recipesDir, name);
    const buildargs: Record<string, string> = {};
    for (const [arg, parent] of recipe.parents) buildargs[arg] = visit(parent, [...path, name]);
    // A root filesystem is bootstrapped from the host's Debian suite, so a suite change must change the tag.
    const parentKeys = recipe.kind === 'rootfs' ? [`debian:${debianSource().suite}`] : Object.values(buildargs);
    const tag = `trialrun/${name}:${recipeHash(recipe.dir, parentKeys)}`;
    plan.push({ recipe, tag, buildargs });
    return tag;
  };
  for (const name of names) visit(name, []);
  return plan;
}

/** 12 hex of sha256 over the folder's files (sorted relative paths, executable bits, contents) and `parentKeys`. */
function recipeHash(dir: string, parentKeys: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of recipeFiles(dir)) {
    const path = join(dir, file);
    const content = readFileSync(path);
    // The executable bit survives COPY and decides whether a script runs, so it is part of the recipe.
    const executable = (statSync(path).mode & 0o111) !== 0 ? 'x' : '-';
    hash.update(`${file}\0${executable}\0${content.length}\0`).update(content);
  }
  for (const key of parentKeys) hash.update(`parent\0${key}\0`);
  return hash.digest('hex').slice(0, 12);
}

/** Regular files under `dir`, as sorted `/`-separated relative paths; also the build context sent to Docker. */
function recipeFiles(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    // Python byte-code appears whenever someone runs the tools locally; it must not change the tag.
    if (entry.isDirectory() && entry.name !== '__pycache__') files.push(...recipeFiles(dir, rel));
    else if (entry.isFile()) files.push(rel);
  }
  return files.sort();
}

function readRecipe(recipesDir: string, name: string): Recipe {
  const dir = join(recipesDir, name);
  if (existsSync(join(dir, ROOTFS_SCRIPT))) return { name, dir, kind: 'rootfs', parents: new Map(), fromArg: null, network: false };
  return readDockerfileRecipe(name, dir);
}

function readDockerfileRecipe(name: string, dir: string): Recipe {
  const dockerfile = join(dir, 'Dockerfile');
  if (!existsSync(dockerfile)) {
    throw new ConfigError(`${dir} is not a sandbox image recipe (it has no ${ROOTFS_SCRIPT} or Dockerfile)`);
  }

  const parents = new Map<string, string>();
  let fromArg: string | null = null;
  for (const line of readFileSync(dockerfile, 'utf8').split('\n').map((l) => l.trim())) {
    if (/^FROM\s/i.test(line)) {
      if (/^FROM\s+trialrun\//i.test(line)) {
        const example = 'ARG BASE_IMAGE=trialrun/base then FROM ${BASE_IMAGE}';
        throw new ConfigError(`${dockerfile}: name trialrun parents through an ARG (${example}) so they build first`);
      }
      fromArg = /^FROM\s+\$\{?([A-Za-z_]\w*)\}?(\s|$)/i.exec(line)?.[1] ?? null;
      break;
    }
    const match = PARENT_ARG.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) parents.set(match[1], match[2]);
  }
  return { name, dir, kind: 'dockerfile', parents, fromArg, network: existsSync(join(dir, PACKAGES_FILE)) };
}

/** Builds every sandbox image that is missing; `stop` has nothing to stop. */
export function imagesComponent(options: ImagesOptions = {}): StackComponent {
  const recipesDir = options.recipesDir ?? checkoutFile('sandbox-images');
  const rootfsCacheDir = options.rootfsCacheDir ?? join(stackPaths().cacheDir, 'rootfs');
  const wheelsCacheDir = join(stackPaths().cacheDir, 'wheels');
  const docker = options.docker ?? dockerClient();
  const setupLog = options.setupLog ?? setupLogFile(stackPaths().stateDir, 'sandbox-images');

  const planned = (): PlannedImage[] => {
    const names = readdirSync(recipesDir, { withFileTypes: true }).filter((e) => e.isDirectory());
    return planImages(recipesDir, names.map((e) => e.name).sort());
  };
  const exists = (tag: string): Promise<boolean> =>
    docker
      .getImage(tag)
      .inspect()
      .then(
        () => true,
        () => false,
      );

  return {
    name: options.name ?? 'sandbox-images',
    endpoint: () =>
      planned()
        .map((p) => p.tag)
        .join(', '),

    async isUp() {
      if (!(await pingDocker(docker))) return false;
      const present = await Promise.all(planned().map((p) => exists(p.tag)));
      return present.every(Boolean);
    },

    async ensure(log) {
      if (options.copyFrom) return copyImages(options.copyFrom, docker, planned().map((p) => p.tag), exists, setupLog, log);
      let built = false;
      for (const { recipe, tag, buildargs } of planned()) {
        if (await exists(tag)) continue;
        const started = Date.now();
        if (recipe.kind === 'rootfs') await importRootfs(docker, recipe, tag, rootfsCacheDir, setupLog, log);
        else await buildDockerfile(docker, recipe, tag, buildargs, setupLog, log, undefined, await recipeWheels(recipe, wheelsCacheDir, setupLog, log));
        log(`built ${tag} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        built = true;
      }
      return built ? 'started' : 'reused';
    },

    async stop() {
      return 'not-running';
    },
  };
}

/** Copies the images among `tags` that `exists` says are missing from `from` to `to`, one `docker save` stream each. */
async function copyImages(from: Docker, to: Docker, tags: readonly string[], exists: (tag: string) => Promise<boolean>, setupLog: string, log: StackLog): Promise<'reused' | 'started'> {
  const missing: string[] = [];
  for (const tag of tags) if (!(await exists(tag))) missing.push(tag);
  if (missing.length === 0) return 'reused';
  for (const tag of missing) {
    const present = await from.getImage(tag).inspect().then(() => true, () => false);
    if (!present) throw new SandboxError(`cannot copy sandbox image ${tag}: the engine it is copied from does not have it (run trialrun stack up first)`);
  }
  const started = Date.now();
  log(`copying ${missing.join(', ')} (docker save | docker load)`);
  for (const tag of missing) {
    await followJsonStream(await to.loadImage(await from.getImage(tag).get()), setupLog);
    const [repo] = splitTag(tag);
    await to.getImage(tag).tag({ repo, tag: 'latest' });
  }
  log(`copied ${missing.length} images in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 'started';
}

async function importRootfs(docker: Docker, recipe: Recipe, tag: string, cacheDir: string, setupLog: string, log: StackLog): Promise<void> {
  const [repo, hash] = splitTag(tag);
  const tarball = join(ensureDir(cacheDir), `${recipe.name}-${hash}.tar`);
  if (existsSync(tarball)) {
    log(`using cached root filesystem ${tarball}`);
  } else {
    const installed = findExecutable('debootstrap') !== undefined;
    const hint = `Run once as root, or copy ${tarball} from a machine that has it.`;
    requireRoot(`bootstrap the ${recipe.name} root filesystem`, hint, { apt: !installed });
    if (!installed) await aptInstall(['debootstrap'], setupLog, log);
    const { suite, mirror, keyring } = debianSource();
    log(`bootstrapping ${recipe.name} (Debian ${suite} from ${mirror}) into ${tarball}`);
    await runCommand('sh', [join(recipe.dir, ROOTFS_SCRIPT), suite, mirror, keyring, tarball], { logFile: setupLog, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  log(`importing ${tarball} as ${tag}`);
  const stream = await docker.importImage(createReadStream(tarball), { repo, tag: hash, changes: ROOTFS_IMAGE_CHANGES });
  await followJsonStream(stream, setupLog);
  await docker.getImage(tag).tag({ repo, tag: 'latest' });
}

async function buildDockerfile(
  docker: Docker,
  recipe: Recipe,
  tag: string,
  buildargs: Record<string, string>,
  setupLog: string,
  log: StackLog,
  stepFailed: (message: string) => Error = (message) => new SandboxError(message),
  wheelsDir: string | null = null,
): Promise<void> {
  log(`building ${tag} from ${recipe.dir}`);
  // The context is the recipe's files, and its wheels (downloaded on the host) under wheels/: a tar of both.
  const context = wheelsDir === null ? { context: recipe.dir, src: recipeFiles(recipe.dir) } : contextWithWheels(recipe.dir, wheelsDir);
  // version '1' is the classic builder: Debian's engine may have no BuildKit, and the recipes need nothing from it.
  // No network, unless the recipe installs Debian packages (packages.txt): dockerd runs without a bridge, so
  // such a build shares the host's network, which reaches the mirror the base was bootstrapped from.
  const stream = await docker.buildImage(
    context,
    { t: tag, buildargs, rm: true, forcerm: true, networkmode: recipe.network ? 'host' : 'none', version: '1' },
  );
  try {
    await followJsonStream(stream, setupLog, stepFailed);
  } finally {
    // The staged copy of recipe and wheels is only the context of this build.
    if (wheelsDir !== null) rmSync(context.context, { recursive: true, force: true });
  }
  const [repo] = splitTag(tag);
  await docker.getImage(tag).tag({ repo, tag: 'latest' });
}

/**
 * Appends Docker's newline-delimited JSON progress to `logFile`; rejects on an `error` message (a failed
 * build still answers 200), naming the log.
 */
export async function followJsonStream(stream: NodeJS.ReadableStream, logFile: string, stepFailed: (message: string) => Error = (message) => new SandboxError(message)): Promise<void> {
  const log = (text: string): void => appendFileSync(logFile, `${text}\n`);
  let pending = '';
  stream.setEncoding('utf8');
  for await (const chunk of stream) {
    const lines = (pending + String(chunk)).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      const message = JSON.parse(line) as { stream?: string; status?: string; error?: string };
      if (message.error !== undefined) throw stepFailed(`docker: ${message.error}${logHint(logFile)}`);
      const text = (message.stream ?? message.status ?? '').trimEnd();
      if (text !== '') log(text);
    }
  }
}

/**
 * The wheels of a recipe's requirements.txt, downloaded once per requirements file into the cache (null for a recipe
 * without one). pip resolves them for the images' interpreter, binary wheels only, so the build installs offline.
 */
async function recipeWheels(recipe: Recipe, cacheDir: string, setupLog: string, log: StackLog): Promise<string | null> {
  const requirements = join(recipe.dir, REQUIREMENTS_FILE);
  if (!existsSync(requirements)) return null;
  // Keyed by the requirements alone: a change elsewhere in the recipe or its parents rebuilds the image, not the download.
  const dir = join(ensureDir(cacheDir), `${recipe.name}-${createHash('sha256').update(readFileSync(requirements)).digest('hex').slice(0, 12)}`);
  const complete = join(dir, '.complete');
  if (existsSync(complete)) return dir;
  log(`downloading the wheels of ${requirements} into ${dir}`);
  await runCommand('python3', ['-m', 'pip', 'download', '--disable-pip-version-check', '--only-binary=:all:', ...IMAGE_PYTHON, '--dest', dir, '-r', requirements], { logFile: setupLog });
  writeFileSync(complete, '');
  return dir;
}

/** A build context of the recipe's files and `wheelsDir`'s wheels under wheels/, as dockerode takes one: a folder and its files. */
function contextWithWheels(recipeDir: string, wheelsDir: string): { context: string; src: string[] } {
  const staged = `${wheelsDir}.context`;
  rmSync(staged, { recursive: true, force: true });
  cpSync(recipeDir, staged, { recursive: true });
  cpSync(wheelsDir, join(staged, 'wheels'), { recursive: true, filter: (path) => !path.endsWith('.complete') });
  return { context: staged, src: recipeFiles(staged) };
}

function splitTag(tag: string): [repo: string, tag: string] {
  const colon = tag.lastIndexOf(':');
  return [tag.slice(0, colon), tag.slice(colon + 1)];
}

/**
 * The host's Debian suite and the mirror apt already uses for it (deb822 `.sources` or one-line `.list`
 * files), so the rootfs comes from wherever this machine is allowed to fetch packages.
 */
function debianSource(): { suite: string; mirror: string; keyring: string } {
  const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
  const field = (key: string): string | undefined => new RegExp(`^${key}="?([^"\\n]*)"?$`, 'm').exec(osRelease)?.[1];
  const suite = field('VERSION_CODENAME');
  if (field('ID') !== 'debian' || suite === undefined || suite === '') {
    throw new ConfigError('the base sandbox image is bootstrapped from the host Debian suite; /etc/os-release names none');
  }

  const defaultKeyring = '/usr/share/keyrings/debian-archive-keyring.gpg';
  for (const entry of aptSources()) {
    const { types, suites, components, uri, signedBy } = entry;
    if (types.includes('deb') && suites.includes(suite) && components.includes('main') && uri !== undefined) {
      return { suite, mirror: uri, keyring: signedBy?.startsWith('/') ? signedBy : defaultKeyring };
    }
  }
  throw new ConfigError(`no apt source for Debian ${suite} main in /etc/apt/sources.list or /etc/apt/sources.list.d/`);
}

interface AptSource {
  types: string[];
  uri: string | undefined;
  suites: string[];
  components: string[];
  signedBy: string | undefined;
}

function aptSources(): AptSource[] {
  const dir = '/etc/apt/sources.list.d';
  const files = [
    '/etc/apt/sources.list',
    ...(existsSync(dir) ? readdirSync(dir).sort().map((f) => join(dir, f)) : []),
  ].filter((f) => (f.endsWith('.list') || f.endsWith('.sources')) && existsSync(f));

  const sources: AptSource[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        // Continuation lines (e.g. an inline Signed-By key) start with white space; skip them and comments.
        const fields = new Map<string, string>();
        for (const line of stanza.split('\n')) {
          const match = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
          if (match?.[1] !== undefined && match[2] !== undefined) fields.set(match[1].toLowerCase(), match[2].trim());
        }
        if (fields.get('enabled') === 'no') continue;
        const list = (key: string): string[] => (fields.get(key) ?? '').split(/\s+/).filter(Boolean);
        sources.push({
          types: list('types'),
          uri: list('uris')[0],
          suites: list('suites'),
          components: list('components'),
          signedBy: fields.get('signed-by'),
        });
      }
    } else {
      for (const line of text.split('\n')) {
        const match = /^\s*(deb(?:-src)?)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
        if (match === null) continue;
        sources.push({
          types: [match[1] ?? ''],
          uri: match[3],
          suites: [match[4] ?? ''],
          components: (match[5] ?? '').split(/\s+/).filter(Boolean),
          signedBy: /signed-by=(\S+)/.exec(match[2] ?? '')?.[1],
        });
      }
    }
  }
  return sources;
}

/** The working folder every trialrun sandbox starts in; a Harbor task's image keeps its starting files there. */
const SANDBOX_WORKDIR = '/workspace';

/**
 * Copies what `tag` holds in its working folder into the empty folder `into` (a Harbor task's starting files:
 * its Dockerfile COPYs them into /workspace, but a sandbox's /workspace is a fresh tmpfs). An image whose
 * WORKDIR is not /workspace is a ConfigError: a sandbox cannot start anywhere else.
 */
export async function extractImageWorkdir(tag: string, into: string, docker: Docker = dockerClient()): Promise<void> {
  const inspected = await docker.getImage(tag).inspect();
  const workdir = inspected.Config?.WorkingDir || '/';
  if (workdir.replace(/\/+$/, '') !== SANDBOX_WORKDIR) {
    throw new ConfigError(`the image ${tag} sets WORKDIR ${workdir}; trialrun sandboxes start in ${SANDBOX_WORKDIR}, so a task image keeps its working folder there (the trialrun images' WORKDIR)`);
  }
  // Created, never started: the archive API reads the image's files through the container's root.
  const container = await docker.createContainer({ Image: tag, Cmd: ['true'], NetworkDisabled: true, HostConfig: { NetworkMode: 'none' } });
  try {
    const archive = await container.getArchive({ path: SANDBOX_WORKDIR });
    // The archive holds `workspace/...`: one level stripped, owners and modes left to the extracting user.
    const tar = spawn('tar', ['-x', '-C', into, '--strip-components=1', '--no-same-owner', '--no-same-permissions'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    tar.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const done = new Promise<void>((resolve, reject) => {
      tar.on('error', reject);
      tar.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}: ${stderr.trim().slice(-400)}`))));
    });
    await pipeline(archive, tar.stdin);
    await done;
  } finally {
    await container.remove({ force: true, v: true }).catch(() => undefined);
  }
}
