import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalTreeStore } from '../../../connectors/artifacts/index.js';
import type { ExecResult, Sandbox, SandboxPool } from '../../../connectors/sandbox/index.js';
import { ConfigError, type FileTree } from '../../../schemas/index.js';
import { applySolveScript, harborLimits, parseHarborConfig, readHarborFolder, requireRewardFile, type HarborHooks } from './harbor.js';
import { resolveWorkspaceJob, runWorkspaceJob } from './workspace-job.js';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'trialrun-harbor-'));
const write = (root: string, tree: Record<string, string>): void => {
  for (const [path, content] of Object.entries(tree)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
};
const TOML = `version = "1.0"
[metadata]
category = "shell"
tags = ["bash"]
author_name = "someone"
[verifier]
timeout_sec = 45.0
env = { MODE = "strict" }
[agent]
timeout_sec = 120.0
[environment]
build_timeout_sec = 600.0
cpus = 2
memory_mb = 1024
storage_mb = 10240
`;
const FOLDER = {
  'instruction.md': '# Fix the script\n\nMake `run.sh` print ok.\n',
  'task.toml': TOML,
  'environment/Dockerfile': 'ARG BASE_IMAGE=trialrun/ops\nFROM ${BASE_IMAGE}\nCOPY --chown=1000:1000 workspace/ /workspace/\n',
  'environment/workspace/run.sh': 'echo broken\n',
  'tests/test.sh': 'if test "$(bash run.sh)" = ok; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
  'tests/helper.py': 'print(1)\n',
  'solution/solve.sh': 'echo "echo ok" > run.sh\n',
};

test('a Harbor task.toml gives the sandbox limits, and every bad field is an error naming the file and the field', () => {
  const config = parseHarborConfig(TOML, 'x/task.toml');
  assert.deepEqual(harborLimits(config), { cpus: 2, memoryBytes: 1024 * 1024 * 1024 });
  assert.deepEqual(harborLimits(parseHarborConfig('[environment]\nmemory = "2G"\n', 't')), { memoryBytes: 2 * 1024 ** 3 });
  assert.equal(harborLimits(parseHarborConfig('version = "1.0"\n', 't')), undefined);
  const bad: Array<[string, RegExp]> = [
    ['[environment]\ncpus = "two"\n', /^x\/task\.toml: environment\.cpus: /],
    ['[environment]\nmemory_gb = 4\n', /x\/task\.toml: environment: .*memory_gb/],
    ['[environment]\nallow_internet = true\n', /environment\.allow_internet: allow_internet = true cannot be honoured: trialrun sandboxes have no network/],
    ['[environment]\ngpus = 1\n', /environment\.gpus: gpus cannot be honoured/],
    ['[environment]\nmemory_mb = 512\nmemory = "1G"\n', /environment\.memory: give memory_mb or memory, not both/],
    ['[environment]\nmemory = "lots"\n', /environment\.memory: must be a size such as "4G"/],
    ['[verifier]\ntimeout_sec = 900\n', /verifier\.timeout_sec: /],
    ['[verifier]\nenv = { "BAD-NAME" = "x" }\n', /verifier\.env\.BAD-NAME: Invalid key in record/],
    ['[agnet]\ntimeout_sec = 1\n', /x\/task\.toml: \(root\): .*agnet/],
    ['[environment\ncpus = 1\n', /^x\/task\.toml is not valid TOML: /],
    ['[verifier]\nenvironment_mode = "separate"\n', /verifier\.environment_mode: only "shared": the tests run in a fresh sandbox of the task's own image/],
    ['[environment]\nnetwork_mode = "allowlist"\n', /environment\.network_mode: only "public" or "no-network": .*allowlist cannot be honoured/],
    ['[environment]\nmcp_servers = [{ name = "docs" }]\n', /environment\.mcp_servers: not honoured by trialrun: MCP servers are not started/],
    ['[environment]\ndocker_image = "ubuntu:24.04"\n', /environment\.docker_image: not honoured by trialrun: a prebuilt image cannot be pulled here/],
    ['steps = [{ name = "one" }]\n', /steps: not honoured by trialrun: multi-step tasks/],
  ];
  // What `harbor tasks init --verifier-mode shared` writes (Harbor 0.25) asks for nothing trialrun cannot honour.
  const init = 'schema_version = "1.4"\nartifacts = []\n[metadata]\n[verifier]\ntimeout_sec = 600.0\nenvironment_mode = "shared"\ncollect = []\n[verifier.env]\n[agent]\ntimeout_sec = 600.0\n[environment]\nnetwork_mode = "public"\nbuild_timeout_sec = 600.0\nos = "linux"\nmcp_servers = []\n[environment.env]\n[solution.env]\n';
  assert.equal(harborLimits(parseHarborConfig(init, 'init/task.toml')), undefined);
  for (const [text, message] of bad) assert.throws(() => parseHarborConfig(text, 'x/task.toml'), (error: unknown) => error instanceof ConfigError && message.test(error.message), text);
});

test('a Harbor folder becomes a prompt, its image recipe, hidden tests with the runner, a script verification and tags', async () => {
  const dir = join(scratch(), 'fix-run');
  write(dir, FOLDER);
  const folder = await readHarborFolder(dir);
  assert.equal(folder.id, 'fix-run');
  assert.equal(folder.title, 'Fix the script');
  assert.match(folder.instruction, /Make `run\.sh` print ok/);
  assert.deepEqual(Object.keys(folder.hidden).sort(), ['.harbor/run-tests.sh', '.harbor/tests/helper.py', '.harbor/tests/test.sh', '.harbor/verifier-env']);
  assert.equal(folder.hidden['.harbor/verifier-env'], 'MODE=strict\n');
  assert.deepEqual(folder.solution, { '.harbor/solution/solve.sh': FOLDER['solution/solve.sh'] });
  assert.deepEqual(folder.verification, { check: { kind: 'script', command: ['bash', '.harbor/run-tests.sh'], timeoutMs: 45_000 } });
  assert.deepEqual(folder.tags, ['harbor', 'shell', 'bash']);
  assert.equal(folder.environmentDir, join(dir, 'environment'));
  const asked = await readHarborFolder(dir, { exitStatusReward: true });
  assert.equal(asked.hidden['.harbor/reward-from-exit-status'], 'the job file sets exitStatusReward\n');
  assert.equal(folder.hidden['.harbor/reward-from-exit-status'], undefined);
});

test('a folder missing a required file, or named unlike a task id, is refused by name', async () => {
  for (const missing of ['task.toml', 'instruction.md', 'tests/test.sh', 'environment/Dockerfile']) {
    const dir = join(scratch(), 'task');
    write(dir, FOLDER);
    rmSync(join(dir, missing));
    await assert.rejects(readHarborFolder(dir), new RegExp(`is not a Harbor task folder: it has no ${missing.replace('.', '\\.')}`));
  }
  const upper = join(scratch(), 'Bad_Name');
  write(upper, FOLDER);
  await assert.rejects(readHarborFolder(upper), /the folder name is the task id/);
  const empty = join(scratch(), 'empty-prompt');
  write(empty, { ...FOLDER, 'instruction.md': '  \n' });
  await assert.rejects(readHarborFolder(empty), /instruction\.md is empty/);
  const trialrunOnly = join(scratch(), 'old-layout');
  write(trialrunOnly, { ...FOLDER, 'workspace/run.sh': 'echo broken\n' });
  await assert.rejects(readHarborFolder(trialrunOnly), /has a workspace\/ folder, which Harbor never reads: put the starting files in the task's image/);
});

/**
 * A pool whose sandboxes run `effect` on their workspace for solve.sh, and whose test runs leave a reward file
 * when `writesReward` says so: enough to check what applySolveScript keeps and what the reward check refuses.
 */
function fakePool(effect: (files: FileTree) => FileTree, exitCode = 0, writesReward: (files: FileTree) => boolean = () => true): SandboxPool & { images: string[] } {
  const images: string[] = [];
  return {
    images,
    async acquire(options) {
      images.push(options.image);
      let files: FileTree = {};
      const sandbox: Partial<Sandbox> = {
        async writeFiles(tree) {
          files = { ...files, ...tree };
        },
        async exec(command) {
          const result = (code: number, stdout = '', stderr = ''): ExecResult => ({ status: 'exited', exitCode: code, stdout, stderr, truncated: false, durationMs: 1 });
          if (command[0] === 'ls') return result(0, writesReward(files) ? 'reward.txt\n' : '');
          if (command[1] === '.harbor/run-tests.sh') return result(0);
          files = effect(files);
          return result(exitCode, '', exitCode ? 'solve failed' : '');
        },
        async snapshot() {
          return { files, extras: { escapedPaths: [], symlinks: [] }, skipped: [] };
        },
        async release() {},
      };
      return sandbox as Sandbox;
    },
    async close() {},
  };
}

const STARTING_FILES: FileTree = { 'run.sh': 'echo broken\n' };
const hooksWith = (pool: SandboxPool): HarborHooks => ({
  buildImage: async (_dir, id) => `trialrun/task-${id}:000000000000`,
  imageFiles: async () => STARTING_FILES,
  pool,
  imageFor: (recipe) => `img/${recipe}`,
  runId: 'run',
});

test('solve.sh: what it adds or changes is the reference; a failing run, a deletion or no change is an error', async () => {
  const dir = join(scratch(), 'fix-run');
  write(dir, FOLDER);
  const folder = await readHarborFolder(dir);
  const pool = fakePool((files) => ({ ...files, 'run.sh': 'echo ok\n', 'notes.txt': 'new\n' }));
  assert.deepEqual(await applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(pool)), { 'run.sh': 'echo ok\n', 'notes.txt': 'new\n' });
  assert.deepEqual(pool.images, ['img/ops']);
  await assert.rejects(applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(fakePool((files) => files, 3))), /solve\.sh failed \(exited, exit 3\): solve failed/);
  await assert.rejects(
    applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(fakePool(({ 'run.sh': _gone, ...rest }) => rest))),
    /solve\.sh: it deletes run\.sh; a reference solution can only add or change text files/,
  );
  await assert.rejects(applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(fakePool((files) => files))), /solve\.sh changes no file of the workspace/);
});

test('tests that write no reward file, over the starting files or the reference, reject the task with Harbor\'s reason', async () => {
  const dir = join(scratch(), 'fix-run');
  write(dir, FOLDER);
  const folder = await readHarborFolder(dir);
  const solved = (files: FileTree): FileTree => ({ ...files, 'run.sh': 'echo ok\n' });
  await requireRewardFile(folder, STARTING_FILES, 'ops', hooksWith(fakePool(solved)));
  const onlyWhenSolved = fakePool(solved, 0, (files) => files['run.sh'] === 'echo ok\n');
  await assert.rejects(
    requireRewardFile(folder, STARTING_FILES, 'ops', hooksWith(onlyWhenSolved)),
    /tests\/test\.sh wrote neither \/logs\/verifier\/reward\.txt nor reward\.json over the starting files \(exit 0\): Harbor reads the reward only from those and ends such a trial in RewardFileNotFoundError; .*`exitStatusReward: true` in the job file/,
  );
  assert.deepEqual(await applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(onlyWhenSolved)), { 'run.sh': 'echo ok\n' });
  await assert.rejects(applySolveScript(folder, STARTING_FILES, 'ops', hooksWith(fakePool(solved, 0, () => false))), /over the reference solution/);
});

test('a harbor job builds each task with its image and reference, and sends a bad folder to the rejects file with its reason', async () => {
  const root = scratch();
  write(join(root, 'good'), FOLDER);
  write(join(root, 'own-image'), FOLDER);
  write(join(root, 'bad-toml'), { ...FOLDER, 'task.toml': '[environment]\ncpus = -1\n' });
  const job = resolveWorkspaceJob({ name: 'harbor-unit', env: 'workspace/v1', format: 'harbor', image: 'ops', folders: ['*/'] }, root);
  const pool = fakePool((files) => ({ ...files, 'run.sh': 'echo ok\n' }));
  const out = scratch();
  const report = await runWorkspaceJob({ job, rejectsDir: join(out, 'rejects'), trees: new LocalTreeStore(join(out, 'store')), dryRun: true, harbor: hooksWith(pool) });
  assert.deepEqual(report.tasks.map((task) => [task.taskId, task.image]), [['good', 'trialrun/task-good:000000000000'], ['own-image', 'trialrun/task-own-image:000000000000']]);
  const [good] = report.tasks;
  assert.deepEqual(good!.files, STARTING_FILES);
  assert.deepEqual(good!.referenceSolution, { 'run.sh': 'echo ok\n' });
  assert.deepEqual(good!.limits, { cpus: 2, memoryBytes: 1024 ** 3 });
  assert.equal(good!.description, FOLDER['instruction.md'].trim());
  assert.equal(good!.verification?.check.kind, 'script');
  assert.equal(report.rejected, 1);
  const rejected = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { source: string; reason: string });
  assert.equal(rejected.length, 1);
  assert.match(rejected[0]!.source, /bad-toml$/);
  assert.match(rejected[0]!.reason, /bad-toml\/task\.toml: environment\.cpus: /);
});

test('a harbor job without its hooks, or with inline tasks, is refused before anything is read', async () => {
  const root = scratch();
  const job = resolveWorkspaceJob({ name: 'h', env: 'workspace/v1', format: 'harbor', folders: ['*/'] }, root);
  await assert.rejects(runWorkspaceJob({ job, rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'store')), dryRun: true }), /needs WorkspaceJobOptions\.harbor/);
  const inline = { id: 'a', title: 't', description: 'd', workspace: 'w' };
  assert.throws(() => resolveWorkspaceJob({ name: 'h', env: 'workspace/v1', format: 'harbor', tasks: [inline] }, root), /a harbor job reads its tasks from folders/);
  assert.throws(() => resolveWorkspaceJob({ name: 'h', env: 'workspace/v1', exitStatusReward: true, tasks: [inline] }, root), /exitStatusReward: exitStatusReward is for format harbor/);
});
