import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LocalTreeStore } from '../../connectors/artifacts/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { GlobalTable } from '../../pipelines/runtime/index.js';
import { createVerifierProcessor } from '../../pipelines/verifier/index.js';
import { publishTasks } from '../../pipelines/jobs/task-job/index.js';
import type { Task, Verification } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { trajectoryFor } from './verifier-fixtures.js';
import { singleTurnTasks } from './workspace-fixtures.js';

// The bundled single-turn families, calibrated: one task of every template verified by the verifier processor in
// Docker grading sandboxes, its reference reply scoring 1 (also inside a Markdown fence, as small models write it),
// the empty starting reply 0 (FN = FP = 0), and a reply that is half right the partial credit its checks give.
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

interface Case {
  readonly name: string;
  readonly reply: (task: Task) => string;
  /** The score it must get: a number, or what the task's checks give. */
  readonly score: (task: Task) => number;
}

const reference = (task: Task): string => task.referenceSolution!['answer.txt']!;
const checksOf = (task: Task): number => (task.verification!.check.kind === 'output' ? task.verification!.check.checks.length : 0);

const EXPRESSION_CASES: Case[] = [
  { name: 'reference', reply: reference, score: () => 1 },
  { name: 'fenced', reply: (task) => `\`\`\`python\nresult = ${reference(task)}\n\`\`\``, score: () => 1 },
  { name: 'empty', reply: () => '', score: () => 0 },
  // Valid Python whose value (None) no template expects: only the validity check passes.
  { name: 'valid-wrong', reply: () => 'None', score: (task) => 1 / checksOf(task) },
];
const DOCUMENT_CASES: Case[] = [
  { name: 'reference', reply: reference, score: () => 1 },
  { name: 'fenced', reply: (task) => `\`\`\`json\n${reference(task)}\n\`\`\`\nThis is the object.`, score: () => 1 },
  { name: 'empty', reply: () => '', score: () => 0 },
  // Every asked-for key right and one extra: all field checks pass, the exact-keys check fails.
  { name: 'extra-key', reply: (task) => JSON.stringify({ ...JSON.parse(reference(task)), note: 'extra' }), score: (task) => (checksOf(task) - 1) / checksOf(task) },
];

test('every template of the single-turn families: reference 1, fenced reference 1, empty reply 0, half-right replies their partial credit', { timeout: 1_200_000 }, async () => {
  const context = await freshContext('single-turn');
  const trees = new LocalTreeStore(tempDir('single-turn-store'));
  // One task per template: the job spreads tasks over the templates in order.
  const families = [
    { tasks: await singleTurnTasks('python-expressions', 32), cases: EXPRESSION_CASES },
    { tasks: await singleTurnTasks('json-documents', 12), cases: DOCUMENT_CASES },
  ];
  assert.deepEqual(families.map((f) => new Set(f.tasks.map((t) => t.tags[1])).size), [32, 12], 'one task per template');
  await publishTasks(context.kafka, context.serde, context.names, families.flatMap((f) => f.tasks), { transactionalId: `${context.names.prefix}single-turn-tasks` });
  const tasks = await GlobalTable.load(context.kafka, context.serde, context.names, 'tasks');
  const verifier = createVerifierProcessor(context, { runId: 'it-single-turn', pool, imageFor, tasks, referenceRuns: 1, timeoutMs: 30_000, trees });
  const expected = new Map<string, number>();
  const trajectories = families.flatMap(({ tasks: list, cases }) =>
    list.flatMap((task) =>
      cases.map((c) => {
        const groupId = `single-turn/${task.taskId}/${c.name}`;
        expected.set(groupId, c.score(task));
        return trajectoryFor(task, { 'answer.txt': c.reply(task) }, { groupId });
      }),
    ),
  );
  try {
    await verifier.start();
    await sendRaw(context, 'trajectories', await Promise.all(trajectories.map(async (t) => ({ key: t.lineage.taskId, value: await context.serde.encode('trajectories', t) }))));
    let verifications: Verification[] = [];
    await eventually(`${trajectories.length} verifications`, async () => (verifications = await readAll(context, 'verifications')).length >= trajectories.length, 1_100_000, 2000);
    assert.deepEqual(await readAll(context, 'deadLetters'), []);
    const wrong = verifications
      .filter((v) => Math.abs((v.score ?? Number.NaN) - expected.get(v.groupId)!) > 1e-9 || v.score === undefined || (v.hacks ?? []).length > 0)
      .map((v) => `${v.groupId}: score ${v.score}, expected ${expected.get(v.groupId)} ${JSON.stringify(v.tests.filter((t) => t.outcome !== 'passed').map((t) => t.message))} ${v.failureDetail ?? ''}`);
    assert.deepEqual(wrong, []);
    assert.equal(new Set(verifications.map((v) => v.groupId)).size, trajectories.length);
  } finally {
    await verifier.stop();
    await tasks.close();
  }
});
