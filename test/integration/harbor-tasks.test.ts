import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { workspaceJobTasks, runWorkspaceJobWithStack } from '../../cli/workspace-tasks.js';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { dockerClient } from '../../stack/docker.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { resolveWorkspaceJob } from '../../pipelines/jobs/task-job/index.js';
import { Verifier } from '../../pipelines/verifier/index.js';
import { NotFoundError, type Task } from '../../schemas/index.js';
import { imageFor, taskImagePlan } from '../../stack/index.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';
import { trajectoryFor } from './verifier-fixtures.js';

// Harbor folders through the task job to published Tasks (the task's own image built FROM trialrun/ops, its
// starting files read out of the image's /workspace, solve.sh applied for the reference), then the reference and
// the starting files through the verifier.
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());
const signal = new AbortController().signal;

const write = (root: string, tree: Record<string, string>): void => {
  for (const [path, content] of Object.entries(tree)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
};

// A fresh marker in the image's folder makes a fresh tag, so the first job run really builds it.
const marker = randomUUID();
const ownImage = {
  'instruction.md': '# Greet from the fixture\n\nMake `greet.sh` print the greeting stored in /opt/fixture/greeting.txt.\n',
  'task.toml': '[verifier]\ntimeout_sec = 60.0\nenv = { EXPECTED = "hello harbor" }\n[environment]\ncpus = 1\nmemory_mb = 512\n',
  'environment/Dockerfile': 'ARG BASE_IMAGE=trialrun/ops\nFROM ${BASE_IMAGE}\nCOPY greeting.txt marker.txt /opt/fixture/\nCOPY --chown=1000:1000 workspace/ /workspace/\n',
  'environment/greeting.txt': 'hello harbor\n',
  'environment/marker.txt': `${marker}\n`,
  'environment/workspace/greet.sh': 'echo goodbye\n',
  'environment/workspace/sub/notes.md': 'starting notes\n',
  // Harbor's absolute paths: the tests in /tests, the reward in /logs/verifier/reward.txt.
  'tests/test.sh': '#!/bin/bash\nif [ "$(bash greet.sh)" = "$EXPECTED" ] && [ -f /tests/test.sh ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
  'solution/solve.sh': '#!/bin/bash\necho "cat /opt/fixture/greeting.txt" > greet.sh\n',
};
// No reward file: Harbor would end every trial in RewardFileNotFoundError, so the task job rejects it, unless the
// job file asks for the exit status (exitStatusReward).
const IMAGE_WITH_SUM = `ARG BASE_IMAGE=trialrun/ops\nFROM \${BASE_IMAGE}\nCOPY --chown=1000:1000 workspace/ /workspace/\n# ${marker}\n`;
const exitStatus = {
  'instruction.md': 'Make `sum.sh` print the sum of its arguments.\n',
  'task.toml': 'version = "1.0"\n',
  'environment/Dockerfile': IMAGE_WITH_SUM,
  'environment/workspace/sum.sh': 'echo $(( $1 - $2 ))\n',
  'tests/test.sh': '#!/bin/bash\nset -e\n[ "$(bash sum.sh 2 3)" = 5 ]\n[ "$(jq -n 2+3)" = 5 ]\n',
  'solution/solve.sh': '#!/bin/bash\necho \'echo $(( $1 + $2 ))\' > sum.sh\n',
};
// A reward file on success only: the starting files leave none, which Harbor's nop agent would hit.
const rewardOnSuccess = { ...exitStatus, 'tests/test.sh': '#!/bin/bash\nset -e\n[ "$(bash sum.sh 2 3)" = 5 ]\necho 1 > /logs/verifier/reward.txt\n' };

test('Harbor folders become Tasks with their image and reference, and the verifier passes the reference and fails the starting files', { timeout: 900_000 }, async () => {
  const root = tempDir('harbor-tasks');
  write(join(root, 'tasks', 'own-image'), ownImage);
  write(join(root, 'tasks', 'exit-status'), exitStatus);
  write(join(root, 'tasks', 'reward-on-success'), rewardOnSuccess);
  write(join(root, 'tasks', 'from-ubuntu'), { ...exitStatus, 'environment/Dockerfile': 'FROM ubuntu:22.04\n' });
  write(join(root, 'tasks', 'broken-image'), { ...exitStatus, 'environment/Dockerfile': `ARG BASE_IMAGE=trialrun/ops\nFROM \${BASE_IMAGE}\nRUN echo ${marker} && false\n` });
  write(join(root, 'tasks', 'elsewhere'), { ...exitStatus, 'environment/Dockerfile': `${IMAGE_WITH_SUM}WORKDIR /app\n` });
  const jobFile = join(root, 'tasks', 'job.yaml');
  writeFileSync(jobFile, 'name: it-harbor\nenv: workspace/v1\nformat: harbor\nfolders: ["own-image/"]\n');
  const job = resolveWorkspaceJob({ name: 'it-harbor', env: 'workspace/v1', format: 'harbor', folders: ['*/'] }, join(root, 'tasks'));

  const context = await freshContext('harbor');
  const report = await runWorkspaceJobWithStack({ job, rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'trees')), context }, pool);
  assert.equal(report.rejected, 5, 'FROM ubuntu, a failing build step, a WORKDIR elsewhere and tests that leave no reward file are rejected');
  const rejects = readFileSync(report.rejectsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { taskId: string; reason: string });
  const reason = (taskId: string): string => rejects.find((entry) => entry.taskId === taskId)?.reason ?? `no reject for ${taskId}`;
  assert.match(reason('broken-image'), /building the task image trialrun\/task-broken-image:[0-9a-f]{12} from .*broken-image\/environment failed: docker: .*non-zero code/);
  assert.match(reason('from-ubuntu'), /`FROM ubuntu:22\.04` does not name a trialrun image through an ARG; a task image is built FROM one of the trialrun images \(trialrun\/base, trialrun\/mini-swe-agent, trialrun\/ops, trialrun\/python-repair\)/);
  assert.match(reason('elsewhere'), /sets WORKDIR \/app; trialrun sandboxes start in \/workspace/);
  assert.match(reason('exit-status'), /tests\/test\.sh wrote neither \/logs\/verifier\/reward\.txt nor reward\.json over the starting files \(exit 1\): Harbor reads the reward only from those and ends such a trial in RewardFileNotFoundError/);
  assert.match(reason('reward-on-success'), /wrote neither .* over the starting files \(exit 1\)/);
  assert.deepEqual(report.publish && [report.publish.added, report.publish.updated], [1, 0]);
  const published = await readAll(context, 'tasks');
  assert.deepEqual(published.map((task) => task.taskId), ['own-image']);

  // The job file's exitStatusReward asks for the exit status: the same folder is then a task.
  const asked = resolveWorkspaceJob({ name: 'it-harbor-exit', env: 'workspace/v1', format: 'harbor', exitStatusReward: true, folders: ['exit-status/'] }, join(root, 'tasks'));
  const exitReport = await runWorkspaceJobWithStack({ job: asked, rejectsDir: join(root, 'rejects'), trees: new LocalTreeStore(join(root, 'trees')), context }, pool);
  assert.equal(exitReport.rejected, 0);
  published.push(...(await readAll(context, 'tasks')).filter((task) => task.taskId === 'exit-status'));

  const plan = taskImagePlan(join(root, 'tasks', 'own-image', 'environment'), 'own-image');
  const own = published.find((task) => task.taskId === 'own-image')!;
  const plain = published.find((task) => task.taskId === 'exit-status')!;
  assert.equal(own.image, plan.tag);
  assert.equal(plain.image, taskImagePlan(join(root, 'tasks', 'exit-status', 'environment'), 'exit-status').tag);
  assert.deepEqual(own.files, { 'greet.sh': 'echo goodbye\n', 'sub/notes.md': 'starting notes\n' }, 'the starting files are what the image holds in /workspace');
  assert.deepEqual(own.limits, { cpus: 1, memoryBytes: 512 * 1024 * 1024 });
  assert.deepEqual(own.referenceSolution, { 'greet.sh': 'cat /opt/fixture/greeting.txt\n' });
  assert.deepEqual(plain.referenceSolution, { 'sum.sh': 'echo $(( $1 + $2 ))\n' });
  assert.match(own.description, /greeting stored in \/opt\/fixture/);

  // An unchanged folder is never rebuilt: a second run finds the same image.
  const built = await dockerClient().getImage(plan.tag).inspect();
  const again = await workspaceJobTasks(jobFile, join(root, 'rejects'), 'job file', pool);
  assert.equal(again.find((task) => task.taskId === 'own-image')?.image, plan.tag);
  assert.equal((await dockerClient().getImage(plan.tag).inspect()).Id, built.Id);

  const lookup = { get: (id: string): Task => published.find((task) => task.taskId === id) ?? (() => { throw new NotFoundError(id); })() };
  const verifier = new Verifier({ runId: 'it-harbor', pool, imageFor, tasks: lookup, referenceRuns: 1, timeoutMs: 30_000, trees: null });
  for (const task of [own, plain]) {
    const good = await verifier.verify(trajectoryFor(task, { ...task.files, ...task.referenceSolution }), signal);
    assert.deepEqual([good.passed, good.checkKind, good.score], [true, 'script', 1], `${task.taskId} reference: ${JSON.stringify(good)}`);
    const bad = await verifier.verify(trajectoryFor(task, task.files), signal);
    assert.deepEqual([bad.passed, bad.checkKind, bad.score], [false, 'script', 0], `${task.taskId} starting files: ${JSON.stringify(bad)}`);
    assert.match(bad.tests[0]?.message ?? '', /reward 0 from reward\.txt/);
  }
});
