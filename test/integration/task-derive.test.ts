import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, it } from 'node:test';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { MUTATION_KINDS, resolveJob, runTaskJob, type TaskJobReport } from '../../pipelines/jobs/task-job/index.js';
import type { Task } from '../../schemas/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, tempDir } from './harness.js';

const HUMANEVAL = resolve(repoRoot(), '..', 'shared', 'datasets', 'HumanEval.jsonl.gz');
const pool = new DockerSandboxPool();
before(ensureStack, { timeout: 900_000 });
after(() => pool.close());

const rejectsOf = (report: TaskJobReport): Array<{ stage: string; reason: string; taskId?: string }> =>
  readFileSync(report.rejectsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { stage: string; reason: string; taskId?: string });

/** The one line where buggy and fixed code differ, or null when they differ in more than one place. */
function singleSite(buggy: string, fixed: string): { before: string; after: string } | null {
  let start = 0;
  while (start < buggy.length && buggy[start] === fixed[start]) start++;
  let end = 0;
  while (end < buggy.length - start && end < fixed.length - start && buggy.at(-1 - end) === fixed.at(-1 - end)) end++;
  const before = fixed.slice(start, fixed.length - end);
  const after = buggy.slice(start, buggy.length - end);
  return before.includes('\n') || after.includes('\n') ? null : { before, after };
}

/** Runs one pytest file against a module in a fresh sandbox; true when every test passed. */
async function passes(task: Task, module: Record<string, string>): Promise<boolean> {
  const sandbox = await pool.acquire({ image: imageFor('python-repair'), runId: 'it-derive-check', taskId: task.taskId });
  try {
    await sandbox.writeFiles({ ...module, ...task.hiddenTests });
    const run = await sandbox.exec(['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', ...Object.keys(task.hiddenTests)], { timeoutMs: 60_000 });
    return run.status === 'exited' && run.exitCode === 0;
  } finally {
    await sandbox.release();
  }
}

it('derives validated repair tasks from HumanEval problems', { skip: !existsSync(HUMANEVAL) && `${HUMANEVAL} is absent`, timeout: 600_000 }, async () => {
  const dir = tempDir('task-humaneval');
  const job = resolveJob(
    {
      name: 'it-humaneval',
      sources: [{ path: HUMANEVAL }],
      importer: 'humaneval',
      limits: { maxRows: 4 },
      derive: { perProblem: 2, maxCandidates: 6, sandboxes: 2, problemsPerSandbox: 2 },
    },
    dir,
  );
  const report = await runTaskJob({ job, rejectsDir: join(dir, 'rejects'), dryRun: true, pool, imageFor });
  const derivation = report.derivation!;
  assert.equal(derivation.problems, 4);
  assert.ok(report.tasks.length >= 4, `only ${report.tasks.length} tasks derived`);
  for (const [kind, survival] of Object.entries(derivation.byKind)) {
    assert.ok((MUTATION_KINDS as readonly string[]).includes(kind));
    assert.equal(survival.tried, survival.valid + survival.equivalent + survival.flaky + survival.slow, kind);
  }
  assert.equal(
    Object.values(derivation.byKind).reduce((sum, s) => sum + s.valid, 0),
    report.tasks.length,
  );

  for (const task of report.tasks) {
    const [module] = Object.keys(task.files);
    const site = singleSite(task.files[module!]!, task.referenceSolution![module!]!);
    assert.ok(site, `${task.taskId}: buggy and fixed code differ in one place`);
    assert.ok((MUTATION_KINDS as readonly string[]).includes(task.tags[0]!), `${task.taskId}: first tag names the mutation kind`);
    assert.match(task.taskId, new RegExp(`^humaneval-\\d+-${task.tags[0]}-[0-9a-f]{8}$`));
    const visible = task.visibleTests['test_visible.py']!;
    const hidden = task.hiddenTests['test_hidden.py']!;
    const cases = (text: string): string[] => text.split(/\n(?=def test_case_)/).slice(1);
    assert.ok(cases(visible).length >= 1 && cases(visible).length <= cases(hidden).length);
    for (const testCase of cases(visible)) assert.ok(cases(hidden).includes(testCase), `${task.taskId}: every visible test is also hidden`);
    assert.equal(task.source.dataset, 'it-humaneval');
    assert.ok(task.source.sourceRow >= 1 && task.source.sourceRow <= 4);
  }

  // Checked independently of the job: the reference passes the hidden tests, the buggy module fails them.
  for (const task of report.tasks.slice(0, 2)) {
    assert.equal(await passes(task, task.referenceSolution!), true, `${task.taskId}: reference passes`);
    assert.equal(await passes(task, task.files), false, `${task.taskId}: buggy module fails`);
  }
});

it('rejects equivalent, slow and flaky mutants with their reasons, from a data set given by a mapping alone', { timeout: 600_000 }, async () => {
  const dir = tempDir('task-derive-rejects');
  const rows = [
    {
      // `value < low` -> `value <= low` changes nothing: an equivalent mutant.
      name: 'clamp',
      doc: 'Clamp value into the closed interval [low, high].',
      code: 'def clamp(value, low, high):\n    if value < low:\n        return low\n    if value > high:\n        return high\n    return value\n',
      visible: 'from clamp import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n',
      hidden: 'from clamp import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n\n\ndef test_outside():\n    assert clamp(-3, 0, 10) == 0\n    assert clamp(12, 0, 10) == 10\n',
    },
    {
      // `i += 1` -> `i -= 1` never ends: a slow mutant.
      name: 'triangle',
      doc: 'Sum of the whole numbers below n.',
      code: 'def triangle(n):\n    i = 0\n    total = 0\n    while i < n:\n        total += i\n        i += 1\n    return total\n',
      visible: 'from triangle import triangle\n\n\ndef test_small():\n    assert triangle(3) == 3\n',
      hidden: 'from triangle import triangle\n\n\ndef test_small():\n    assert triangle(3) == 3\n\n\ndef test_larger():\n    assert triangle(10) == 45\n',
    },
    {
      // The hidden test only checks every other run, so any mutant it catches is caught in one run of two: flaky.
      name: 'double',
      doc: 'Twice the number given.',
      code: 'def double(x):\n    return x * 2\n',
      visible: 'from double import double\n\n\ndef test_zero():\n    assert double(0) == 0\n',
      hidden:
        'import os\nfrom double import double\n\nMARKER = "/tmp/trialrun-it-alternate"\n\n\ndef test_sometimes():\n    checking = not os.path.exists(MARKER)\n' +
        '    if checking:\n        open(MARKER, "w").close()\n    else:\n        os.remove(MARKER)\n    assert not checking or double(3) == 6\n',
    },
  ].map((row) => ({ ...row, id: `toy-${row.name}` }));
  writeFileSync(join(dir, 'toys.jsonl'), rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
  const job = resolveJob(
    {
      name: 'it-toys',
      sources: [{ path: 'toys.jsonl' }],
      mapping: { kind: 'solution', id: '{id}', title: '{name}', description: '`{name}`: {doc}', module: '{name}.py', source: '{code}', tests: { style: 'pytest', visible: '{visible}', hidden: '{hidden}' } },
      filters: { minDescriptionChars: 10 },
      derive: { kinds: ['compare-op', 'arith-op'], perProblem: 20, maxCandidates: 20, sandboxes: 2, problemsPerSandbox: 1 },
    },
    dir,
  );
  const report = await runTaskJob({ job, rejectsDir: join(dir, 'rejects'), dryRun: true, pool, imageFor });
  const derive = rejectsOf(report).filter((reject) => reject.stage === 'derive');
  const reasonFor = (prefix: string, pattern: RegExp): string | undefined => derive.find((reject) => reject.taskId?.startsWith(prefix) && pattern.test(reject.reason))?.reason;
  assert.ok(reasonFor('toy-clamp-compare-op', /line 2 \(< -> <=\) rejected: equivalent mutant: it passes every visible and hidden test/), derive.map((r) => `${r.taskId}: ${r.reason}`).join('\n'));
  assert.ok(reasonFor('toy-triangle-arith-op', /\+= -> -=\) rejected: slow: the tests ran past the timeout/), derive.map((r) => `${r.taskId}: ${r.reason}`).join('\n'));
  assert.ok(reasonFor('toy-double-arith-op', /rejected: flaky: the mutant's runs failed different tests/), derive.map((r) => `${r.taskId}: ${r.reason}`).join('\n'));
  const survival = report.derivation!.byKind;
  assert.ok(survival['compare-op']!.equivalent >= 1);
  assert.ok(survival['arith-op']!.slow >= 1 && survival['arith-op']!.flaky >= 1);
  // What survived is real: clamp and triangle keep valid mutants, double keeps none (its hidden test is unreliable).
  const families = new Set(report.tasks.map((task) => task.taskId.replace(/-(compare-op|arith-op)-[0-9a-f]{8}$/, '')));
  assert.deepEqual([...families].sort(), ['toy-clamp', 'toy-triangle']);
});
