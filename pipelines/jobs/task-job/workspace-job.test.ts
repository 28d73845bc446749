import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LocalTreeStore } from '../../../connectors/artifacts/index.js';
import { resolveWorkspaceJob, runWorkspaceJob } from './workspace-job.js';
import { readTree } from './workspace-trees.js';

const scratch = (): string => mkdtempSync(join(tmpdir(), 'trialrun-ws-job-'));
const write = (root: string, tree: Record<string, string | Buffer>): void => {
  for (const [path, content] of Object.entries(tree)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
};
const TREE = { 'pkg/a.py': 'x = 1\n', 'tests/test_a.py': 'def test_a(): pass\n', 'pkg/__pycache__/a.pyc': Buffer.from([0xff, 0]) };
const EXPECTED = { 'pkg/a.py': 'x = 1\n', 'tests/test_a.py': 'def test_a(): pass\n' };

test('a tree is the same from a folder, a tarball and a git commit (caches and .git left out, uncommitted edits not seen)', async () => {
  const root = scratch();
  write(join(root, 'folder'), TREE);
  execFileSync('tar', ['-czf', join(root, 'tree.tar.gz'), '-C', join(root, 'folder'), '.']);
  const repo = join(root, 'repo');
  write(repo, EXPECTED);
  const git = (...args: string[]): string => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
  git('init', '-q');
  git('add', '.');
  git('commit', '-qm', 'first');
  const commit = git('rev-parse', 'HEAD');
  writeFileSync(join(repo, 'pkg', 'a.py'), 'x = 2  # not committed\n');
  const options = { maxFileBytes: 1024 };
  assert.deepEqual(await readTree({ folder: join(root, 'folder') }, options), EXPECTED);
  assert.deepEqual(await readTree({ tarball: join(root, 'tree.tar.gz') }, options), EXPECTED);
  assert.deepEqual(await readTree({ git: repo, commit }, options), EXPECTED);
  await assert.rejects(readTree({ git: repo, commit: 'ffffffffffff' }, options), /archiving .* at ffffffffffff failed/);
});

test('files a tree cannot carry are refused by name', async () => {
  const root = scratch();
  write(root, { 'bin.dat': Buffer.from([0xff, 0xfe]) });
  await assert.rejects(readTree({ folder: root }, { maxFileBytes: 1024 }), /bin\.dat in .* is not UTF-8 text/);
  const linked = scratch();
  symlinkSync('/etc/passwd', join(linked, 'link'));
  await assert.rejects(readTree({ folder: linked }, { maxFileBytes: 1024 }), /link in .* is a symlink/);
  const big = scratch();
  write(big, { 'big.txt': 'x'.repeat(2000) });
  await assert.rejects(readTree({ folder: big }, { maxFileBytes: 1024 }), /big\.txt in .* is 2000 bytes; a workspace file may hold at most 1024/);
});

test('the job builds tasks with their verification, stores large trees, and rejects what it cannot build with the reason', async () => {
  const root = scratch();
  write(join(root, 'small', 'workspace'), EXPECTED);
  write(join(root, 'large', 'workspace'), { ...EXPECTED, 'data.txt': 'y'.repeat(5000) });
  write(join(root, 'large', 'hidden'), { 'tests/hidden/test_h.py': 'def test_h(): pass\n' });
  const verification = { check: { kind: 'tests', runner: 'pytest', failToPass: ['tests/hidden/test_h.py::test_h'], passToPass: ['tests/test_a.py::test_a'] } };
  writeFileSync(join(root, 'large', 'task.json'), JSON.stringify({ id: 'large', title: 'large', description: 'a large one', workspace: 'workspace', hidden: 'hidden', verification }));
  const job = resolveWorkspaceJob(
    { name: 'ws', env: 'workspace/v1', storeTreesAboveBytes: 1000, folders: ['large'], tasks: [{ id: 'small', title: 'small', description: 'a small one', workspace: 'small/workspace' }, { id: 'gone', title: 'gone', description: 'no tree', workspace: 'missing' }] },
    root,
  );
  const store = new LocalTreeStore(join(root, 'store'));
  const report = await runWorkspaceJob({ job, rejectsDir: join(root, 'rejects'), trees: store, dryRun: true });
  assert.deepEqual(report.tasks.map((task) => task.taskId), ['small', 'large']);
  const [small, large] = report.tasks;
  assert.deepEqual(small!.files, EXPECTED);
  assert.deepEqual(small!.verification, { check: { kind: 'tests', runner: 'pytest', failToPass: [], passToPass: [] } }, 'the environment\'s default');
  assert.deepEqual(large!.files, {});
  assert.deepEqual(Object.keys(large!.stored ?? {}), ['files']);
  assert.equal((await store.get(large!.stored!.files!))['data.txt'], 'y'.repeat(5000));
  assert.deepEqual(large!.hiddenTests, { 'tests/hidden/test_h.py': 'def test_h(): pass\n' });
  assert.deepEqual(large!.verification, verification);
  assert.equal(report.rejected, 1);
  const [reject] = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { taskId: string; stage: string; reason: string });
  assert.deepEqual([reject!.taskId, reject!.stage], ['gone', 'read']);
  assert.match(reject!.reason, /cannot read the folder .*missing/);
});

test('a job file is checked whole: the env, its tasks, a verification of a known kind', () => {
  assert.throws(() => resolveWorkspaceJob({ name: 'ws', env: 'workspace/v1' }, '/'), /tasks: give tasks or folders/);
  assert.throws(() => resolveWorkspaceJob({ name: 'ws', env: 'workspace/v1', tasks: [{ id: 'a', title: 't', description: 'd', workspace: 'w', verification: { check: { kind: 'vibes' } } }] }, '/'), /tasks\.0\.verification\.check/);
});
