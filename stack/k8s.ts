/**
 * A one-node Kubernetes cluster on this machine (`trialrun stack up --k8s`): k3s built from its Go module once
 * into the cache, run as one process (API server, scheduler, controllers, kubelet and its embedded containerd).
 * The API server listens on the loopback address only; pods run the images `stack up` built, imported into
 * containerd, and nothing is pulled.
 *
 * What this machine needs and why (docs/kubernetes.md has the measurements):
 * - the kernel mounts cgroup v1 (hybrid), which Kubernetes 1.35's kubelet refuses unless `fail-cgroupv1=false`;
 * - the VM refuses any negative oom_score_adj, and containerd gives every pod sandbox -998, so runc could start
 *   no pod: containerd's shims find our `runc` first on their PATH (`stack/k8s/runc-oom-floor.c`), which raises a
 *   negative score to 0 and runs Debian's runc. (cri-dockerd, the `--docker` route, hard-codes the same -998.)
 * - no registry is reachable, so the pod sandbox ("pause") image is a static program of ours, imported;
 * - no CoreDNS, Traefik, ServiceLB, metrics server, local storage, kube-proxy, network policy or cloud controller: the
 *   sandboxes need none of them and their images cannot be pulled;
 * - no flannel (its CNI binary is not in Debian): pods get Debian's bridge plugin on a bridge with no address on
 *   the host and no gateway, so a pod has an address but no route out of the bridge.
 */
import { createHash } from 'node:crypto';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { cpSync, createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { checkoutFile, ConfigError } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { aptInstall, dockerClient, findExecutable, requireRoot } from './docker.js';
import { followJsonStream } from './images.js';
import { daemonFiles, runCommand, runningDaemon, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, setupLogFile, stackPaths } from './state.js';

/** The k3s commit the Go module proxy serves (a pseudo-version of the v1.35 branch; Kubernetes v1.35.1). */
export const K3S_MODULE_VERSION = 'v1.35.1-0.20260211145931-c5b158798933';
const K3S_MODULE = 'github.com/k3s-io/k3s';
/** What the binary reports as its version (the Kubernetes release its replace directives pin). */
const K3S_VERSION = 'v1.35.1+k3s1';
/** k3s's own release build tags, less `seccomp` (it needs libseccomp's headers; Docker applies its own profile). */
const K3S_BUILD_TAGS = 'ctrd netcgo osusergo providerless urfave_cli_no_docs sqlite_omit_load_extension apparmor';
/** Where containerd looks for CNI configurations and plugins by default (k3s passes it others only with flannel). */
const CNI_CONF_DIR = '/etc/cni/net.d';
const CNI_BIN_DIR = '/opt/cni/bin';
const CNI_PLUGINS = ['bridge', 'host-local', 'loopback'] as const;
const DEBIAN_CNI_DIR = '/usr/lib/cni';
const DAEMON = 'k3s';
/** containerd's socket under k3s (its default state folder), for importing images. */
const CONTAINERD_SOCKET = '/run/k3s/containerd/containerd.sock';
/** The containerd namespace the kubelet's pods live in. */
const CRI_NAMESPACE = 'k8s.io';
/** The pod sandbox image containerd's CRI plugin asks for under k3s (its `sandbox_image` default); ours is tagged so. */
const CRI_SANDBOX_IMAGE = 'registry.k8s.io/pause:3.6';
const execFileAsync = promisify(execFile);

export interface K8sOptions {
  /** Holds the pid file (`run/k3s.pid`), the log (`logs/k3s.log`), the data folder and the kubeconfig. @default `stackPaths().stateDir` */
  stateDir?: string;
  /** The k3s source tree and binary live under `<cacheDir>/k3s-<version>`. @default `stackPaths().cacheDir` */
  cacheDir?: string;
  /** The API server's port on 127.0.0.1. @default 6443 */
  apiPort?: number;
  /** The Docker engine the stack built its images on; they are copied from it into the cluster's containerd. @default env DOCKER_HOST, else `unix:///var/run/docker.sock` */
  dockerHost?: string;
  /** The pods' bridge network (host-local addresses; no gateway, no masquerade). @default `10.42.0.0/24` */
  podSubnet?: string;
  /** How long to wait for the API server and the node to be ready. @default 180000 */
  startTimeoutMs?: number;
}

export interface K8sPaths {
  readonly binary: string;
  readonly sourceDir: string;
  readonly dataDir: string;
  readonly kubeconfig: string;
}

export function k8sPaths(stateDir = stackPaths().stateDir, cacheDir = stackPaths().cacheDir): K8sPaths {
  const cache = join(cacheDir, `k3s-${K3S_MODULE_VERSION}`);
  return {
    binary: join(cache, 'bin', 'k3s-server'),
    sourceDir: join(cache, 'src'),
    dataDir: join(stateDir, 'k8s', 'data'),
    kubeconfig: join(stateDir, 'k8s', 'kubeconfig.yaml'),
  };
}

/** Runs one of the binary's embedded tools (`kubectl`, `ctr`), picked by the name it is started under as k3s's own links do; stdout, or a rejection with stderr. */
function k3sTool(paths: K8sPaths, tool: 'kubectl' | 'ctr', args: readonly string[], timeoutMs: number, input?: string | NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolveOut, reject) => {
    const child = spawn(paths.binary, args, { argv0: tool, stdio: ['pipe', 'pipe', 'pipe'] });
    if (input === undefined || typeof input === 'string') child.stdin.end(input ?? '');
    else input.pipe(child.stdin);
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs + 5_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolveOut(out);
      else reject(new Error(`${tool} ${args.join(' ')} failed (exit ${code}): ${err.trim()}`));
    });
  });
}

/** Runs the binary's embedded kubectl against the stack's cluster (`input` on its stdin); resolves with stdout, rejects with stderr. */
export function kubectl(paths: K8sPaths, args: readonly string[], timeoutMs = 30_000, input?: string): Promise<string> {
  return k3sTool(paths, 'kubectl', ['--kubeconfig', paths.kubeconfig, `--request-timeout=${Math.ceil(timeoutMs / 1000)}s`, ...args], timeoutMs, input);
}

/** The image references containerd holds for the kubelet (`docker.io/<repo>:<tag>` for what was imported from Docker). */
async function containerdImages(paths: K8sPaths): Promise<Set<string>> {
  const out = await k3sTool(paths, 'ctr', ['--address', CONTAINERD_SOCKET, '--namespace', CRI_NAMESPACE, 'images', 'list', '--quiet'], 30_000);
  return new Set(out.split('\n').map((line) => line.trim()).filter((line) => line !== ''));
}

/** containerd's name for a Docker image tag (Docker's short names are docker.io's). */
const containerdRef = (tag: string): string => (tag.split('/')[0]!.includes('.') ? tag : `docker.io/${tag}`);

/**
 * Copies Docker images (tags `stack up` built) into containerd's CRI namespace, each once: pods run them with
 * `imagePullPolicy: Never`, as nothing can be pulled here. Needs the cluster running.
 */
export async function importImages(paths: K8sPaths, tags: readonly string[], options: { dockerHost?: string; log?: StackLog } = {}): Promise<void> {
  const present = await containerdImages(paths);
  const docker = dockerClient(options.dockerHost);
  for (const tag of tags) {
    if (present.has(containerdRef(tag))) continue;
    options.log?.(`importing ${tag} into the cluster's containerd`);
    const tarball = await docker.getImage(tag).get();
    // `--local` (here and for `tag`): ctr 2.x otherwise goes through a transfer service the embedded containerd lacks.
    await k3sTool(paths, 'ctr', ['--address', CONTAINERD_SOCKET, '--namespace', CRI_NAMESPACE, 'images', 'import', '--local', '-'], 600_000, tarball);
  }
}

/**
 * Builds k3s once: the module zip from the Go module proxy (its replace directives rule out `go install`), built
 * inside the unpacked tree, so every replaced module resolves. Tens of minutes on two cores; `nice` keeps it
 * from starving everything else on the machine.
 */
async function buildK3s(paths: K8sPaths, setupLog: string, log: StackLog): Promise<void> {
  const go = findExecutable('go');
  if (go === undefined) throw new ConfigError('building k3s needs the Go toolchain (`go` on PATH), which is not installed');
  const logFile = setupLog;
  if (!existsSync(join(paths.sourceDir, 'go.mod'))) {
    log(`downloading ${K3S_MODULE}@${K3S_MODULE_VERSION}`);
    const download = await execFileAsync(go, ['mod', 'download', '-json', `${K3S_MODULE}@${K3S_MODULE_VERSION}`], { maxBuffer: 1 << 20 }).catch((error: unknown) => {
      throw new ConfigError(`go mod download ${K3S_MODULE}@${K3S_MODULE_VERSION} failed: ${String(error)}`);
    });
    const moduleDir = (JSON.parse(download.stdout) as { Dir?: string }).Dir;
    if (moduleDir === undefined) throw new ConfigError(`go mod download named no folder for ${K3S_MODULE}@${K3S_MODULE_VERSION}: ${download.stdout}`);
    // The module cache is read-only, and the build needs the tree to be its main module (for the replace directives).
    rmSync(paths.sourceDir, { recursive: true, force: true });
    cpSync(moduleDir, paths.sourceDir, { recursive: true });
    await runCommand('chmod', ['-R', 'u+w', paths.sourceDir], { logFile });
  }
  log('downloading the modules k3s depends on');
  await runCommand('nice', ['-n', '19', go, 'mod', 'download'], { logFile, cwd: paths.sourceDir });
  // k3s refuses to start unless the binary names the Go release it was built with (Kubernetes pins go1.25; the
  // machine's toolchain is what we have, so we name that one and say so in docs/kubernetes.md).
  const goVersion = (await execFileAsync(go, ['env', 'GOVERSION'])).stdout.trim();
  const versions = [
    `-X ${K3S_MODULE}/pkg/version.Version=${K3S_VERSION}`,
    `-X ${K3S_MODULE}/pkg/version.UpstreamGolang=${goVersion}`,
    `-X k8s.io/client-go/pkg/version.gitVersion=${K3S_VERSION}`,
    `-X k8s.io/component-base/version.gitVersion=${K3S_VERSION}`,
    '-X k8s.io/client-go/pkg/version.gitMajor=1',
    '-X k8s.io/client-go/pkg/version.gitMinor=35',
    '-X k8s.io/component-base/version.gitMajor=1',
    '-X k8s.io/component-base/version.gitMinor=35',
  ];
  const partial = `${paths.binary}.partial`;
  log(`building k3s (tags: ${K3S_BUILD_TAGS}) into ${paths.binary}`);
  const started = Date.now();
  await runCommand(
    'nice',
    ['-n', '19', go, 'build', '-p', '2', '-tags', K3S_BUILD_TAGS, '-ldflags', `${versions.join(' ')} -w -s`, '-o', partial, './cmd/server'],
    { logFile, cwd: paths.sourceDir, env: { ...process.env, CGO_ENABLED: '1' } },
  );
  cpSync(partial, paths.binary);
  rmSync(partial, { force: true });
  log(`built k3s in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/**
 * Our `runc` for containerd's shims (the file's header says why), compiled once per source and per runc it runs;
 * returns the folder to put first on k3s's PATH.
 */
async function ensureRuncOomFloor(cacheRoot: string, setupLog: string, log: StackLog): Promise<string> {
  if (findExecutable('gcc') === undefined) await aptInstall(['gcc', 'libc6-dev'], setupLog, log);
  if (findExecutable('runc') === undefined) await aptInstall(['runc'], setupLog, log);
  const realRunc = findExecutable('runc');
  if (realRunc === undefined) throw new ConfigError('runc is not installed (Debian package runc), and containerd needs it to run pods');
  const source = checkoutFile('stack/k8s/runc-oom-floor.c');
  const hash = createHash('sha256').update(readFileSync(source)).update(realRunc).digest('hex').slice(0, 12);
  const dir = join(cacheRoot, `runc-oom-floor-${hash}`);
  const binary = join(dir, 'runc');
  if (existsSync(binary)) return dir;
  ensureDir(dir);
  log(`compiling ${source} (runs ${realRunc}) into ${binary}`);
  await runCommand('gcc', ['-O2', '-Wall', '-Wextra', '-Werror', `-DREAL_RUNC="${realRunc}"`, '-o', `${binary}.partial`, source], { logFile: setupLog });
  renameSync(`${binary}.partial`, binary);
  return dir;
}

/** The pause image: our static pause program in an image of one file, tagged by the source's hash. */
async function ensurePauseImage(dockerHost: string | undefined, setupLog: string, log: StackLog): Promise<string> {
  const source = checkoutFile('stack/k8s/pause.c');
  const hash = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 12);
  const tag = `trialrun/k8s-pause:${hash}`;
  const docker = dockerClient(dockerHost);
  try {
    await docker.getImage(tag).inspect();
    return tag;
  } catch {
    // not imported yet
  }
  if (findExecutable('gcc') === undefined) await aptInstall(['gcc', 'libc6-dev'], setupLog, log);
  const rootfs = mkdtempSync(join(ensureDir(stackPaths().cacheDir), 'k8s-pause-'));
  try {
    await runCommand('gcc', ['-static', '-Os', '-s', '-o', join(rootfs, 'pause'), source], { logFile: setupLog });
    const tarball = join(rootfs, 'pause.tar');
    await runCommand('tar', ['-C', rootfs, '-cf', tarball, 'pause'], { logFile: setupLog });
    log(`importing the pause image ${tag}`);
    const [repo, version] = tag.split(':') as [string, string];
    await followJsonStream(await docker.importImage(createReadStream(tarball), { repo, tag: version, changes: ['ENTRYPOINT ["/pause"]'] }), setupLog);
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  return tag;
}

/** Debian's CNI plugins where cri-dockerd looks, and one bridge network for the pods with no way out of it. */
async function ensureCni(podSubnet: string, setupLog: string, log: StackLog): Promise<void> {
  if (!CNI_PLUGINS.every((plugin) => existsSync(join(DEBIAN_CNI_DIR, plugin)))) await aptInstall(['containernetworking-plugins'], setupLog, log);
  ensureDir(CNI_BIN_DIR);
  for (const plugin of CNI_PLUGINS) {
    const target = join(CNI_BIN_DIR, plugin);
    if (!existsSync(target)) cpSync(join(DEBIAN_CNI_DIR, plugin), target);
  }
  const config = {
    cniVersion: '1.0.0',
    name: 'trialrun-pods',
    plugins: [
      // isGateway false: the bridge has no address on the host, so a pod reaches neither the host nor beyond it.
      { type: 'bridge', bridge: 'trialrun-k8s0', isGateway: false, ipMasq: false, hairpinMode: false, ipam: { type: 'host-local', ranges: [[{ subnet: podSubnet }]] } },
      { type: 'loopback' },
    ],
  };
  ensureDir(CNI_CONF_DIR);
  writeFileSync(join(CNI_CONF_DIR, '10-trialrun-pods.conflist'), `${JSON.stringify(config, null, 2)}\n`);
}

/** Where the kubelet puts pods in each cgroup v1 hierarchy (cgroupfs driver). */
const POD_CGROUP = 'kubepods';

/**
 * The processes of pods and of their containerd shims, as k3s leaves them when it stops (containers outlive
 * k3s by design, so that an upgrade does not restart them). Read from the pods' cgroups and the shims' command
 * lines, as k3s's own kill-all script does.
 */
export function podProcesses(): number[] {
  const pids = new Set<number>();
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line.trim() !== '') pids.add(Number(line));
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name));
  };
  walk(join('/sys/fs/cgroup/pids', POD_CGROUP));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let commandLine: string;
    try {
      commandLine = readFileSync(join('/proc', entry, 'cmdline'), 'utf8');
    } catch {
      continue; // the process ended while we looked
    }
    if (commandLine.includes('containerd-shim') && commandLine.includes(CONTAINERD_SOCKET)) pids.add(Number(entry));
  }
  return [...pids];
}

/** SIGKILLs what `podProcesses` finds; returns how many there were. */
function killPodProcesses(): number {
  const pids = podProcesses();
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids.length;
}

export function k8sComponent(options: K8sOptions = {}): StackComponent {
  const stateDir = options.stateDir ?? stackPaths().stateDir;
  const paths = k8sPaths(stateDir, options.cacheDir ?? stackPaths().cacheDir);
  const apiPort = options.apiPort ?? 6443;
  const dockerHost = options.dockerHost;
  const podSubnet = options.podSubnet ?? '10.42.0.0/24';
  const startTimeoutMs = options.startTimeoutMs ?? 180_000;
  const endpoint = `https://127.0.0.1:${apiPort}`;

  const apiReady = async (): Promise<boolean> =>
    existsSync(paths.binary) && existsSync(paths.kubeconfig) && (await kubectl(paths, ['get', '--raw=/readyz'], 5_000).then((out) => out.trim() === 'ok', () => false));
  const nodeReady = async (): Promise<boolean> => {
    const out = await kubectl(paths, ['get', 'nodes', '-o', 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}'], 5_000);
    return out.trim() === 'True';
  };

  return {
    name: 'k8s',
    endpoint: () => endpoint,
    isUp: async () => (await apiReady()) && (await nodeReady().catch(() => false)),

    async ensure(log) {
      if (runningDaemon(stateDir, DAEMON, 'k3s-server') !== undefined && (await apiReady()) && (await nodeReady().catch(() => false))) return 'reused';
      requireRoot('run a Kubernetes node (kubelet, cgroups, pod networks)', 'Run `trialrun stack up --k8s` as root.', { apt: true });
      const setupLog = setupLogFile(stateDir, 'k8s');
      if (!existsSync(paths.binary)) await buildK3s(paths, setupLog, log);
      const pauseImage = await ensurePauseImage(dockerHost, setupLog, log);
      const runcDir = await ensureRuncOomFloor(dirname(paths.binary), setupLog, log);
      await ensureCni(podSubnet, setupLog, log);
      if (runningDaemon(stateDir, DAEMON, 'k3s-server') === undefined) {
        ensureDir(paths.dataDir);
        const args = [
          'server',
          `--data-dir=${paths.dataDir}`,
          `--write-kubeconfig=${paths.kubeconfig}`,
          '--write-kubeconfig-mode=0600',
          '--bind-address=127.0.0.1',
          `--https-listen-port=${apiPort}`,
          `--pause-image=${containerdRef(pauseImage)}`,
          '--disable=traefik,servicelb,metrics-server,local-storage,coredns',
          '--disable-helm-controller',
          '--disable-kube-proxy',
          '--disable-network-policy',
          // The embedded cloud controller never got its permissions here (its SubjectAccessReviews timed out), so the
          // node kept the uninitialized taint and nothing was scheduled; without it the kubelet sets no such taint.
          '--disable-cloud-controller',
          '--flannel-backend=none',
          '--kubelet-arg=fail-cgroupv1=false',
        ];
        log(`starting ${paths.binary} ${args.join(' ')} (log: ${daemonFiles(stateDir, DAEMON).logFile})`);
        const { logFile, pid } = await startDaemon(stateDir, { name: DAEMON, command: paths.binary, args, env: { ...process.env, PATH: [runcDir, process.env.PATH ?? ''].join(delimiter) } });
        await waitUntil(apiReady, { what: `the API server at ${endpoint}`, timeoutMs: startTimeoutMs, logFile, pid });
        await waitUntil(nodeReady, { what: 'the k3s node (Ready)', timeoutMs: startTimeoutMs, logFile, pid });
        log(`k3s is up (pid ${pid}); KUBECONFIG=${paths.kubeconfig}`);
      } else {
        const { logFile } = daemonFiles(stateDir, DAEMON);
        await waitUntil(nodeReady, { what: 'the k3s node (Ready)', timeoutMs: startTimeoutMs, logFile });
      }
      await importImages(paths, [pauseImage], { dockerHost, log });
      // The name containerd's CRI plugin runs pod sandboxes from: its `sandbox_image` setting (default below), not the
      // pinned image `--pause-image` writes (measured: the kubelet's sandboxes asked for this name and nothing else).
      await k3sTool(paths, 'ctr', ['--address', CONTAINERD_SOCKET, '--namespace', CRI_NAMESPACE, 'images', 'tag', '--local', '--force', containerdRef(pauseImage), CRI_SANDBOX_IMAGE], 30_000);
      return 'started';
    },

    async stop(log) {
      if (runningDaemon(stateDir, DAEMON, 'k3s-server') === undefined) return (await apiReady()) ? 'not-ours' : 'not-running';
      // Pods first, while the kubelet still runs to stop them; then whatever the kubelet left running.
      await kubectl(paths, ['delete', 'pods', '--all', '--all-namespaces', '--wait=true', '--timeout=60s'], 90_000).catch((error: unknown) => log(`deleting pods: ${String(error)}`));
      await stopDaemon(stateDir, DAEMON, { match: 'k3s-server', graceMs: 30_000 });
      const left = killPodProcesses();
      log(`stopped k3s${left > 0 ? ` and killed ${left} pod processes it left` : ''}`);
      return 'stopped';
    },
  };
}
