import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { bucketOf, dataFileName, REWARDS, writeParquetRows } from '../../connectors/analytics/index.js';
import type { Reward } from '../../schemas/index.js';
import { ConfigError, type Task } from '../../schemas/index.js';
import { formatReport, resolveJob, runTaskJob, taskFingerprint, type JobSpecInput, type TaskJobReport } from '../../pipelines/jobs/task-job/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, freshContext, readAll, tempDir } from './harness.js';

type Row = Record<string, unknown> & { id: string; description: string; tags: string[] };
const bundleRows = (): Row[] =>
  readFileSync(join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Row);

const jsonl = (rows: readonly unknown[]): string => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

async function duckdb(sql: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function job(dir: string, overrides: Partial<JobSpecInput> & { sources: JobSpecInput['sources'] }): ReturnType<typeof resolveJob> {
  return resolveJob({ name: 'it-tasks', importer: 'repair-rows', ...overrides }, dir);
}

const dryRun = (dir: string, spec: Parameters<typeof job>[1], analyticsDir?: string): Promise<TaskJobReport> =>
  runTaskJob({ job: job(dir, spec), rejectsDir: join(dir, 'rejects'), analyticsDir, dryRun: true });

const rejectsOf = (report: TaskJobReport): Array<{ source: string; row: number; stage: string; reason: string; taskId?: string }> =>
  readFileSync(report.rejectsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { source: string; row: number; stage: string; reason: string; taskId?: string });

describe('task job: sources and cleaning (DuckDB)', () => {
  it('reads JSON Lines, gzipped JSON Lines, JSON, CSV, Parquet and globs into the same tasks', async () => {
    const dir = tempDir('task-formats');
    const rows = bundleRows().slice(0, 4);
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    writeFileSync(join(dir, 'rows.jsonl.gz'), gzipSync(jsonl(rows)));
    writeFileSync(join(dir, 'rows.json'), JSON.stringify(rows));
    writeFileSync(join(dir, 'part-1.jsonl'), jsonl(rows.slice(0, 2)));
    writeFileSync(join(dir, 'part-2.jsonl'), jsonl(rows.slice(2)));
    const from = `read_json('${join(dir, 'rows.jsonl')}', format = 'newline_delimited')`;
    await duckdb(`COPY (SELECT * FROM ${from}) TO '${join(dir, 'rows.parquet')}' (FORMAT parquet)`);
    await duckdb(`COPY (SELECT * REPLACE (array_to_string(tags, ';') AS tags) FROM ${from}) TO '${join(dir, 'rows.csv')}' (HEADER)`);

    const expected = rows.map((row) => row.id);
    let fingerprints: string[] | null = null;
    for (const file of ['rows.jsonl', 'rows.jsonl.gz', 'rows.json', 'rows.csv', 'rows.parquet', 'part-*.jsonl']) {
      const report = await dryRun(dir, { sources: [{ path: file }] });
      const byId = new Map(report.tasks.map((task) => [task.taskId, task]));
      assert.deepEqual([...byId.keys()].sort(), [...expected].sort(), file);
      const prints = expected.map((id) => taskFingerprint(byId.get(id)!));
      fingerprints ??= prints;
      assert.deepEqual(prints, fingerprints, `${file} gives the same task content`);
      assert.equal(report.rejected, 0, file);
      if (!file.startsWith('part-')) assert.deepEqual(expected.map((id) => byId.get(id)!.source.sourceRow), [1, 2, 3, 4], file);
      assert.equal(report.stages[0]!.notes[0], file.startsWith('part-') ? '2 file(s)' : '1 file(s)');
    }
  });

  it('rejects every bad row with its source, row and reason, and numbers good rows by line', async () => {
    const dir = tempDir('task-rejects');
    const [a, b, c] = bundleRows();
    const lines: Buffer[] = [
      Buffer.from(JSON.stringify(a)), // 1: good
      Buffer.from(''), // 2: blank, skipped
      Buffer.from('{"id": "broken", '), // 3: not JSON
      Buffer.from(JSON.stringify({ ...b, hidden_tests: undefined })), // 4: missing a mapped column
      Buffer.from(JSON.stringify({ ...b, id: 'Not A Valid Id' })), // 5: fails the row schema
      Buffer.concat([Buffer.from('{"id": "latin1", "title": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]), // 6: not UTF-8
      Buffer.from(JSON.stringify({ ...b, id: 'huge', description: 'x'.repeat(50 * 1024 * 1024) })), // 7: a 50 MB field
      Buffer.from(JSON.stringify(c)), // 8: good
      Buffer.from('[1, 2]'), // 9: not an object
      Buffer.from(JSON.stringify({ ...a, id: 'copy-of-a', buggy_source: (a!.buggy_source as string).replaceAll('\n', '\r\n') })), // 10: exact duplicate
      Buffer.from(JSON.stringify({ ...b, id: 'vague', description: 'Fix it.' })), // 11: too vague
    ];
    writeFileSync(join(dir, 'rows.jsonl'), Buffer.concat(lines.flatMap((line) => [line, Buffer.from('\n')])));
    const report = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }] });

    assert.deepEqual(report.tasks.map((task) => [task.taskId, task.source.sourceRow]), [
      [a!.id, 1],
      [c!.id, 8],
    ]);
    const rejects = rejectsOf(report);
    assert.ok(rejects.every((reject) => reject.source === join(dir, 'rows.jsonl')));
    const byRow = new Map(rejects.map((reject) => [reject.row, reject]));
    assert.deepEqual([...byRow.keys()].sort((x, y) => x - y), [3, 4, 5, 6, 7, 9, 10, 11]);
    assert.match(byRow.get(3)!.reason, /^not valid JSON/);
    assert.match(byRow.get(4)!.reason, /column "hidden_tests" is missing/);
    assert.match(byRow.get(5)!.reason, /^id: must be lower-case/);
    assert.equal(byRow.get(6)!.reason, 'not valid UTF-8');
    assert.match(byRow.get(7)!.reason, /longer than limits\.maxRowBytes \(1048576 bytes\): 524\d{5} bytes/);
    assert.match(byRow.get(9)!.reason, /not a JSON object/);
    assert.match(byRow.get(10)!.reason, new RegExp(`exact duplicate of ${a!.id}`));
    assert.match(byRow.get(11)!.reason, /fewer than filters\.minDescriptionChars/);
    assert.deepEqual(
      Object.fromEntries(report.stages.map((stage) => [stage.stage, [stage.rowsIn, stage.rowsOut]])),
      { read: [10, 6], map: [6, 5], validate: [5, 3], dedup: [3, 2], curriculum: [2, 2], build: [2, 2] },
    );
  });

  it('rejects a row however deep, long or strange with its line and reason, and the job goes on', async () => {
    const dir = tempDir('task-pathological');
    const [a, b, c, d] = bundleRows();
    const nested = (levels: number, inner: string): string => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`;
    const deepObject = (levels: number): string => `${'{"k":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const { id: _id, title: _title, ...rest } = b!;
    const lines = [
      JSON.stringify(a), // 1: good
      JSON.stringify({ ...b, id: 'deep-tags' }).replace('"tags":[', `"tags":[${nested(5000, '"x"')},`), // 2: 5000 levels in a plain column
      `{"id": "deep-title", "title": ${deepObject(100_000)}, ${JSON.stringify(rest).slice(1)}`, // 3: 100k levels in a templated column
      JSON.stringify(c), // 4: good
      JSON.stringify({ ...b, id: 'spaces', description: `${' '.repeat(900_000)}x \n` }), // 5: a long run of spaces (quadratic for a naive regex)
      JSON.stringify({ ...b, id: 'strange', title: 1e308, tags: { constructor: [] }, priority: 'high' }), // 6: strange types
      JSON.stringify({ ...d, id: 'newlines', hidden_tests: `${d!.hidden_tests as string}${'\n'.repeat(400_000)}` }), // 7: long but valid
      JSON.stringify({ ...b, id: 'lone-surrogate', buggy_source: `${b!.buggy_source as string}# \ud800\n` }), // 8: not text
      JSON.stringify({ ...b, id: 'nul', hidden_tests: `${b!.hidden_tests as string}\u0000` }), // 9: not Python source
      JSON.stringify({ ...b, id: 'huge', description: 'x'.repeat(20 << 20) }), // 10: one 20 MB string (a whole JSON file's read used to fail on it)
    ];
    writeFileSync(join(dir, 'rows.jsonl'), `${lines.join('\n')}\n`);
    writeFileSync(join(dir, 'rows.json'), `[${lines.join(',\n')}]`);
    for (const file of ['rows.jsonl', 'rows.json']) {
      const report = await dryRun(dir, { sources: [{ path: file }] });
      assert.deepEqual(report.tasks.map((task) => [task.taskId, task.source.sourceRow]), [[a!.id, 1], [c!.id, 4], ['newlines', 7]], file);
      const byRow = new Map(rejectsOf(report).map((reject) => [reject.row, reject]));
      assert.deepEqual([...byRow.keys()], [2, 3, 5, 6, 8, 9, 10], file);
      assert.ok([...byRow.values()].every((reject) => reject.source === join(dir, file)));
      assert.equal(byRow.get(2)!.reason, 'nested deeper than limits.maxRowDepth (32 levels): 5002 levels of arrays and objects');
      assert.equal(byRow.get(3)!.reason, 'nested deeper than limits.maxRowDepth (32 levels): 100001 levels of arrays and objects');
      assert.equal(byRow.get(2)!.stage, 'read');
      assert.match(byRow.get(5)!.reason, /fewer than filters\.minDescriptionChars/);
      assert.match(byRow.get(6)!.reason, /^tags: .*expected array.*; priority: .*expected number/);
      assert.equal(byRow.get(8)!.reason, 'buggy_source: holds a lone surrogate (such as "\\ud800"), which is not text');
      assert.equal(byRow.get(9)!.reason, 'hidden_tests: holds a NUL character, which Python refuses in source code');
      assert.match(byRow.get(10)!.reason, /^longer than limits\.maxRowBytes \(1048576 bytes\): 2097\d{4} bytes/);
    }
  });

  it('rejects a task whose record the broker would refuse before publishing, not mid-transaction', async () => {
    const dir = tempDir('task-record-size');
    const [a, b] = bundleRows();
    const bulky = { ...b, id: 'bulky', hidden_tests: `${b!.hidden_tests as string}\n# ${'padding '.repeat(150_000)}\n` };
    writeFileSync(join(dir, 'rows.jsonl'), jsonl([a, bulky]));
    const report = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }], limits: { maxRowBytes: 4 << 20 } });
    assert.deepEqual(report.tasks.map((task) => task.taskId), [a!.id]);
    const [reject] = rejectsOf(report);
    assert.equal(reject!.stage, 'build');
    assert.match(reject!.reason, /the task record would be \d+ bytes, over publish\.maxRecordBytes \(1000000\)/);
  });

  it('stops with an error naming the file for an empty file, a missing file, an unmatched glob and wrong columns', async () => {
    const dir = tempDir('task-bad-files');
    writeFileSync(join(dir, 'empty.jsonl'), '');
    await duckdb(`COPY (SELECT 1 AS task, 'x' AS prompt) TO '${join(dir, 'wrong.parquet')}' (FORMAT parquet)`);
    writeFileSync(join(dir, 'wrong.csv'), 'identifier,text\n1,x\n');
    writeFileSync(join(dir, 'rows.txt'), 'x');
    writeFileSync(join(dir, 'fake.parquet'), 'this is not parquet');
    const failure = async (path: string, pattern: RegExp): Promise<void> => {
      await assert.rejects(dryRun(dir, { sources: [{ path }] }), (error: unknown) => {
        assert.ok(error instanceof ConfigError, `${path}: ${String(error)}`);
        assert.match(error.message, pattern);
        return true;
      });
    };
    await failure('empty.jsonl', /source file .*empty\.jsonl is empty/);
    await failure('missing.jsonl', /source file .*missing\.jsonl does not exist/);
    await failure('nothing-*.jsonl', /no file matches the source pattern .*nothing-\*\.jsonl/);
    await failure('wrong.parquet', /wrong\.parquet lacks column\(s\) the mapping needs: "id" \(mapping\.id\), .*; its columns are: task, prompt/);
    await failure('wrong.csv', /wrong\.csv lacks column\(s\).*"buggy_source" \(mapping\.buggySource\)/);
    await failure('rows.txt', /cannot tell the format of .*rows\.txt/);
    await failure('fake.parquet', /reading .*fake\.parquet as parquet failed/);
  });

  it('drops near duplicates and contaminated train rows, and reports both', async () => {
    const dir = tempDir('task-dedup');
    const [a, b, c] = bundleRows();
    const near = { ...b, id: 'near-b', buggy_source: `${b!.buggy_source as string}\n# a comment that changes little\n` };
    const evalCopy = { ...c, id: 'eval-c', split: 'eval', title: 'Same task, eval split' };
    writeFileSync(join(dir, 'rows.jsonl'), jsonl([a, b, near, c, evalCopy]));
    const report = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }] });
    assert.deepEqual(report.tasks.map((task) => task.taskId).sort(), [a!.id, b!.id, 'eval-c'].sort());
    assert.equal(report.nearDuplicates, 1);
    assert.equal(report.contaminationHits, 1);
    const reasons = rejectsOf(report).map((reject) => `${reject.taskId}: ${reject.reason}`);
    assert.ok(reasons.some((reason) => reason.startsWith(`near-b: near-duplicate of ${b!.id}`)), reasons.join('\n'));
    assert.ok(reasons.some((reason) => reason.startsWith(`${c!.id}: contaminates the eval split: near-duplicate of eval task eval-c`)), reasons.join('\n'));
  });

  it('checks rows in worker threads past its first 10,000, with the same tasks, rejects and duplicates as in its own thread', async () => {
    const dir = tempDir('task-check-threads');
    const bundle = bundleRows();
    // 12,600 rows: variants of the bundle (near duplicates of each other), exact copies, invalid rows, an
    // id reused with other content and one reused with the same content, some of each past the first 10,000.
    const rows: unknown[] = [];
    for (let i = 0; i < 12_600; i++) {
      const base = bundle[i % bundle.length]!;
      if (i % 997 === 0) rows.push({ ...base, id: `bad id ${i}` });
      else if (i % 1_201 === 0) rows.push(rows[i - 1]);
      else if (i === 11_111) rows.push({ ...base, id: `${bundle[3]!.id}-v3`, description: `${base.description} Reused id, other content.` });
      else if (i === 11_112) rows.push(rows[3]);
      else rows.push({ ...base, id: `${base.id}-v${i}`, description: `${base.description} Variant ${i} of ${base.id}.`, tags: [...base.tags, `v${i % 7}`] });
    }
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    const run = (checkThreads: number): Promise<TaskJobReport> => runTaskJob({ job: job(dir, { sources: [{ path: 'rows.jsonl' }] }), rejectsDir: join(dir, `rejects-${checkThreads}`), dryRun: true, checkThreads, jobRunId: 'same-run' });
    const [inThread, inWorkers] = [await run(0), await run(2)];
    const validate = (report: TaskJobReport) => report.stages.find((stage) => stage.stage === 'validate')!;
    assert.ok(validate(inWorkers).notes.some((note) => note.startsWith('checked in 2 worker thread(s)')), validate(inWorkers).notes.join('; '));
    assert.ok(!validate(inThread).notes.some((note) => note.includes('worker')));
    assert.deepEqual(validate(inWorkers).rejects, validate(inThread).rejects);
    assert.deepEqual(validate(inThread).rejects, { 'invalid id': 13, 'duplicate id': 1 });
    assert.deepEqual(rejectsOf(inWorkers), rejectsOf(inThread));
    assert.deepEqual(inWorkers.duplicates, inThread.duplicates);
    assert.equal(inThread.exactDuplicates, 11);
    const timeless = (report: TaskJobReport) => report.tasks.map((task) => ({ ...task, lineage: { ...task.lineage, createdAt: '' } }));
    assert.deepEqual(timeless(inWorkers), timeless(inThread));
    assert.equal(inThread.taskCount, inWorkers.taskCount);
  });

  it('drops copies that differ only in layout as exact and copies with renamed identifiers as near duplicates, and lists which row each copies', async () => {
    const dir = tempDir('task-dedup-normalised');
    const [a, b, c] = bundleRows();
    const code = (row: Row, edit: (text: string) => string): Row => ({ ...row, buggy_source: edit(row.buggy_source as string), fixed_source: edit(row.fixed_source as string), visible_tests: edit(row.visible_tests as string), hidden_tests: edit(row.hidden_tests as string) });
    const renames = new Map([['binary_search', 'find_position'], ['items', 'values'], ['target', 'wanted'], ['lo', 'left'], ['hi', 'right'], ['mid', 'middle']]);
    const rows = [
      a, // 1
      b, // 2
      code({ ...a!, id: 'a-trailing-spaces' }, (text) => text.replaceAll('\n', ' \t \n')), // 3
      code({ ...a!, id: 'a-crlf-blank-lines' }, (text) => text.replaceAll('\n', '\r\n').replace('\r\n', '\r\n\r\n\r\n')), // 4
      code({ ...b!, id: 'b-no-final-newline' }, (text) => text.trimEnd()), // 5
      code({ ...a!, id: 'a-renamed' }, (text) => text.replace(/\b[a-z_][a-z0-9_]*\b/gi, (name) => renames.get(name) ?? name)), // 6
      c, // 7
    ];
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    const report = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }] });
    assert.deepEqual(report.tasks.map((task) => task.taskId).sort(), [a!.id, b!.id, c!.id].sort());
    assert.equal(report.exactDuplicates, 3);
    assert.equal(report.nearDuplicates, 1);
    assert.deepEqual(
      report.duplicates.map((d) => [d.category, d.row, d.taskId, d.of.row, d.of.taskId]),
      [
        ['exact duplicate', 3, 'a-trailing-spaces', 1, a!.id],
        ['exact duplicate', 4, 'a-crlf-blank-lines', 1, a!.id],
        ['exact duplicate', 5, 'b-no-final-newline', 2, b!.id],
        ['near duplicate', 6, 'a-renamed', 1, a!.id],
      ],
    );
    // The kept tasks' content is the rows' own (normalised for publishing, not for comparing).
    assert.deepEqual(Object.values(report.tasks.find((task) => task.taskId === a!.id)!.files), [a!.buggy_source]);
    const printed = formatReport(report);
    assert.match(printed, /duplicates {3}3 exact, 1 near/);
    assert.match(printed, new RegExp(`dropped rows\\.jsonl:4 a-crlf-blank-lines  exact copy of  rows\\.jsonl:1 ${a!.id}\\n`));
    assert.match(printed, new RegExp(`dropped rows\\.jsonl:6 a-renamed  near copy of  rows\\.jsonl:1 ${a!.id} \\(similarity (0\\.9\\d|1\\.00)\\)`));
    const rejects = new Map(rejectsOf(report).map((reject) => [reject.row, reject.reason]));
    assert.match(rejects.get(5)!, new RegExp(`^exact duplicate of ${b!.id} \\(the same content up to whitespace the code does not care about\\)`));
    assert.match(rejects.get(6)!, new RegExp(`^near-duplicate of ${a!.id}`));
  });

  it("writes its tasks as rows that read back as the same tasks: a family's variants stay together, splits are kept", async () => {
    const dir = tempDir('task-rows-out');
    const [a, b] = bundleRows();
    const variant = { ...b, id: 'b-variant', family: 'family-b', buggy_source: `${b!.buggy_source as string}\n# a comment that changes little\n` };
    writeFileSync(join(dir, 'rows.jsonl'), jsonl([a, { ...b, family: 'family-b' }, variant]));
    const first = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }], split: { evalFraction: 0.5, by: 'family', seed: 'rows-out' } });
    assert.equal(first.nearDuplicates, 0, 'variants of one family are not near duplicates');
    assert.equal(first.rows.length, 3);
    assert.equal(first.rows.find((row) => row.id === 'b-variant')?.family, 'family-b');
    writeFileSync(join(dir, 'out.jsonl'), jsonl(first.rows));
    const again = await dryRun(dir, { sources: [{ path: 'out.jsonl' }] });
    const summary = (report: TaskJobReport) => report.tasks.map((task) => `${task.taskId} ${task.split} ${taskFingerprint(task)}`).sort();
    assert.deepEqual(summary(again), summary(first));
    assert.equal(again.rejected, 0);
  });

  it('places tasks by pass rates from the analytics store, parks those without signal, and applies the mix', async () => {
    const dir = tempDir('task-curriculum');
    const rows = bundleRows().slice(0, 6);
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    // Observed: rows 0 and 1 always pass, row 2 never passes (parked); rows 3 and 4 are hard; row 5 unseen.
    const outcomes: Record<string, number[]> = {
      [rows[0]!.id]: Array(12).fill(1),
      [rows[1]!.id]: Array(2).fill(1),
      [rows[2]!.id]: Array(10).fill(0),
      [rows[3]!.id]: [0, 0, 0, 0, 0, 1],
      [rows[4]!.id]: [0, 0, 0, 0, 1, 0, 0],
    };
    const analyticsDir = join(dir, 'analytics');
    const rewards: Array<{ record: Reward; meta: { topic: string; partition: number; offset: string } }> = [];
    for (const [taskId, values] of Object.entries(outcomes)) {
      values.forEach((reward, attempt) => {
        const id = `${taskId}/${attempt}`;
        rewards.push({
          record: { rewardId: id, trajectoryId: id, verificationId: id, groupId: taskId, reward, advantage: 0, groupMean: 0, groupStd: 0, groupSize: values.length, lineage: { taskId, attempt, runId: 'earlier-run', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: '2025-01-01T00:00:00.000Z' } },
          meta: { topic: 'it.rewards', partition: 0, offset: String(rewards.length) },
        });
      });
    }
    const file = join(analyticsDir, 'rewards', bucketOf('earlier-run', '2025-01-01T00:00:00.000Z'), dataFileName({ topic: 'it.rewards', partition: 0, first: 0n, last: BigInt(rewards.length - 1) }));
    await writeParquetRows(file, REWARDS, rewards);

    const report = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }] }, analyticsDir);
    const byId = new Map(report.tasks.map((task) => [task.taskId, task]));
    assert.equal(byId.has(rows[0]!.id), false, 'always solved: parked');
    assert.equal(byId.has(rows[2]!.id), false, 'never solved: parked');
    assert.equal(report.parked, 2);
    // Seen twice and passed twice is easy, not certain: a Beta prior around its tag's 14/24 keeps it from 0.
    const twice = byId.get(rows[1]!.id)!.difficulty!;
    assert.ok(twice > 0.1 && twice < 0.35, `difficulty ${twice}`);
    assert.ok(byId.get(rows[3]!.id)!.difficulty! > 0.7);
    assert.equal(report.coldStart, 1);
    const parkedReasons = rejectsOf(report).filter((reject) => reject.stage === 'curriculum');
    assert.equal(parkedReasons.length, 2);
    assert.match(parkedReasons.find((r) => r.taskId === rows[0]!.id)!.reason, /parked: passed 12 of 12 rollouts/);

    const mixed = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }], difficulty: { mix: { easy: 0.5, hard: 0.5 } } }, analyticsDir);
    assert.deepEqual(Object.fromEntries(mixed.buckets.map((b) => [b.bucket, b.selected])), { easy: 1, medium: 0, hard: 1 });
    assert.equal(mixed.deferred, 2);
  });
});

describe('task job: publishing (Kafka)', () => {
  before(ensureStack, { timeout: 900_000 });

  it('publishes keyed tasks with lineage in one batch, and a re-run publishes nothing twice', { timeout: 180_000 }, async () => {
    const context = await freshContext('task-publish');
    const dir = tempDir('task-publish');
    const rows = bundleRows().slice(0, 5).map((row, i) => ({ ...row, priority: i % 2 }));
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    const spec = { sources: [{ path: 'rows.jsonl' }] };
    const first = await runTaskJob({ job: job(dir, spec), rejectsDir: join(dir, 'rejects'), context });
    assert.deepEqual(first.publish && { added: first.publish.added, updated: first.publish.updated, unchanged: first.publish.unchanged }, { added: 5, updated: 0, unchanged: 0 });
    const published = await readAll(context, 'tasks');
    assert.deepEqual(published.map((task) => task.taskId).sort(), rows.map((row) => row.id).sort());
    for (const task of published) {
      assert.equal(task.source.dataset, 'it-tasks');
      assert.equal(task.source.jobRunId, first.jobRunId);
      assert.equal(task.source.datasetHash, first.datasetHash);
      assert.equal(task.source.sourceRow, rows.findIndex((row) => row.id === task.taskId) + 1);
    }

    const again = await runTaskJob({ job: job(dir, spec), rejectsDir: join(dir, 'rejects'), context });
    assert.deepEqual(again.publish && [again.publish.added, again.publish.updated, again.publish.unchanged], [0, 0, 5]);
    assert.equal((await readAll(context, 'tasks')).length, 5, 're-running the job adds no record');

    rows[2] = { ...rows[2]!, description: `${rows[2]!.description} Note: inputs may be empty.` };
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(rows));
    const changed = await runTaskJob({ job: job(dir, spec), rejectsDir: join(dir, 'rejects'), context });
    assert.deepEqual(changed.publish && [changed.publish.added, changed.publish.updated, changed.publish.unchanged], [0, 1, 4]);
    const revisions = (await readAll(context, 'tasks')).filter((task) => task.taskId === rows[2]!.id);
    assert.equal(revisions.length, 2);
    assert.match(revisions[1]!.description, /inputs may be empty/);
  });

  it('a job killed mid-publish leaves nothing visible, and the next run publishes the batch once', { timeout: 180_000 }, async () => {
    const context = await freshContext('task-crash');
    const dir = tempDir('task-crash');
    writeFileSync(join(dir, 'rows.jsonl'), jsonl(bundleRows().slice(0, 6)));
    const prepared = await dryRun(dir, { sources: [{ path: 'rows.jsonl' }] });
    const tasksFile = join(dir, 'tasks.json');
    writeFileSync(tasksFile, JSON.stringify(prepared.tasks));

    // A separate process opens the job's transaction, sends the first records and is killed before committing.
    const dist = join(repoRoot(), 'dist');
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { readFileSync, writeSync } from 'node:fs';
        const { createKafka } = await import(${JSON.stringify(join(dist, 'connectors/kafka/index.js'))});
        const { TopicSerde } = await import(${JSON.stringify(join(dist, 'connectors/registry/index.js'))});
        const { topicNames } = await import(${JSON.stringify(join(dist, 'schemas/index.js'))});
        const { publishTasks } = await import(${JSON.stringify(join(dist, 'pipelines/jobs/task-job/index.js'))});
        const names = topicNames(${JSON.stringify(context.names.prefix)});
        const tasks = JSON.parse(readFileSync(${JSON.stringify(tasksFile)}, 'utf8'));
        await publishTasks(createKafka(), new TopicSerde(names), names, tasks, {
          transactionalId: ${JSON.stringify(`${context.names.prefix}task-job.it-tasks`)},
          batchSize: 2,
          // Stop dead after the first produce request: report it, then block until killed.
          onProgress: () => { writeSync(1, 'SENT\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); },
        });
        `,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('SENT') && resolve());
      child.on('exit', (code) => reject(new Error(`the publishing child exited early with ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    // Nothing of the open (or, once it times out, aborted) transaction is visible to a read-committed reader:
    // a read to the end (the last stable offset) finds no record.
    assert.deepEqual(await readAll(context, 'tasks'), []);

    // The next run fences the dead one (same transactional id), finds nothing published, and publishes all.
    const rerun = await runTaskJob({ job: job(dir, { sources: [{ path: 'rows.jsonl' }] }), rejectsDir: join(dir, 'rejects'), context });
    assert.equal(rerun.publish!.added, 6);
    const published: Task[] = await readAll(context, 'tasks');
    assert.equal(published.length, 6);
    assert.equal(new Set(published.map((task) => task.taskId)).size, 6);
  });
});
