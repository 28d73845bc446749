import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { bucketOf, dataFileName, REWARDS, writeParquetRows, type Row } from '../../connectors/analytics/index.js';
import { createKafka, inTransaction, readRange } from '../../connectors/kafka/index.js';
import { policyIds } from '../../policies/index.js';
import type { Reward } from '../../schemas/index.js';
import { syntheticReward } from './analytics-fixtures.js';
import { ensureStack, freshContext, runCli, tempDir, type CliRun } from './harness.js';

before(ensureStack, { timeout: 900_000 });

const trialrun = runCli;

/** One line on stderr, `trialrun <command>: ...`, with no JS stack frame in it. */
function assertOneLine(run: CliRun, command: string, message: RegExp): void {
  assert.match(run.stderr, /^[^\n]*\n$/, `one line on stderr, got:\n${run.stderr}`);
  assert.ok(run.stderr.startsWith(`trialrun ${command}: `), run.stderr);
  assert.match(run.stderr, message);
  assert.doesNotMatch(run.stderr, /\n\s+at |\{"/, 'no stack trace, no client JSON');
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Rewards where the sink would write them: one run, one file. */
async function landRewards(dataDir: string, runId: string, count: number): Promise<void> {
  const records = Array.from({ length: count }, (_, i) => syntheticReward(i, { runId }));
  const rows: Row<Reward>[] = records.map((record, i) => ({ record, meta: { topic: 't.rewards', partition: 0, offset: String(i) } }));
  const file = dataFileName({ topic: 't.rewards', partition: 0, first: 0n, last: BigInt(count - 1) });
  await writeParquetRows(join(dataDir, 'rewards', bucketOf(runId, records[0]!.lineage.createdAt), file), REWARDS, rows);
}

test('a wrong option, policy, file or job field is one line and exit 2, before the stack is touched', { timeout: 180_000 }, async () => {
  // Kafka and the state folder point nowhere: a command that got as far as `stack up` would say so first.
  const env = { KAFKA_BROKERS: `127.0.0.1:${await closedPort()}`, TRIALRUN_STATE_DIR: tempDir('cli-state') };
  const workers = await trialrun(['demo', '--workers', 'abc'], { env });
  assert.equal(workers.code, 2);
  assert.equal(workers.stderr, 'trialrun demo: --workers must be a whole number >= 1, got "abc"\n');
  const policy = await trialrun(['demo', '--policy', 'nope'], { env });
  assert.equal(policy.code, 2);
  assertOneLine(policy, 'demo', new RegExp(`--policy must be one of ${policyIds().join(', ')}, got "nope"`));
  const tasks = await trialrun(['demo', '--tasks', '/nonexistent/tasks.jsonl'], { env });
  assert.equal(tasks.code, 2);
  assertOneLine(tasks, 'demo', /--tasks: no such file \/nonexistent\/tasks\.jsonl/);
  const minutes = await trialrun(['learn', '--minutes', 'ten'], { env });
  assert.equal(minutes.code, 2);
  assertOneLine(minutes, 'learn', /--minutes must be a number > 0, got "ten"/);

  const dir = tempDir('cli-job');
  writeFileSync(join(dir, 'rows.jsonl'), '');
  writeFileSync(join(dir, 'job.yaml'), 'name: typo\nsources:\n  - path: rows.jsonl\nimporter: repair-rows\ndedupe:\n  nearDuplicateThreshold: 0.8\n');
  const job = await trialrun(['tasks', 'publish', join(dir, 'job.yaml'), '--dry-run'], { env });
  assert.equal(job.code, 2);
  assert.ok(job.stderr.startsWith('trialrun tasks: '), job.stderr);
  assert.match(job.stderr, /dedupe/, 'the misspelt field is named');
  assert.doesNotMatch(job.stderr, /\n\s+at /);

  const unknown = await trialrun(['replya'], { env });
  assert.equal(unknown.code, 2);
  assertOneLine({ ...unknown, stderr: unknown.stderr.replace(/^trialrun:/, 'trialrun replya:') }, 'replya', /unknown command "replya"/);

  // The trace is there for whoever asks.
  const debug = await trialrun(['demo', '--workers', 'abc'], { env: { ...env, TRIALRUN_DEBUG: '1' } });
  assert.equal(debug.code, 2);
  assert.match(debug.stderr, /^trialrun demo: --workers must be a whole number >= 1, got "abc"\nConfigError: .*\n\s+at /);
  const debugFlag = await trialrun(['--debug', 'demo', '--workers', 'abc'], { env });
  assert.match(debugFlag.stderr, /\n\s+at /);
});

test('sql and notebook name the data folder they found empty, missing or without the run, whatever the current folder', { timeout: 180_000 }, async () => {
  const empty = tempDir('cli-empty-store');
  const noFiles = await trialrun(['sql', 'SELECT count(*) FROM trajectories'], { env: { TRIALRUN_DATA_DIR: empty } });
  assert.equal(noFiles.code, 2);
  assertOneLine(noFiles, 'sql', new RegExp(`no Parquet files under ${empty}; run the demo or pass --data-dir`));
  const wrongDir = await trialrun(['sql', '--data-dir', join(empty, 'nope'), 'SELECT 1']);
  assert.equal(wrongDir.code, 2);
  assertOneLine(wrongDir, 'sql', new RegExp(`no data folder ${join(empty, 'nope')}; run the demo or pass --data-dir`));
  const notebook = await trialrun(['notebook', 'run', 'learning-curve', '--data-dir', empty, '--out', tempDir('cli-reports')]);
  assert.equal(notebook.code, 2);
  assertOneLine(notebook, 'notebook', /no Parquet files under/);

  // Not the current folder: the checkout's state folder, named in the message.
  const elsewhere = await trialrun(['sql', '--run', `no-such-run-${randomUUID()}`, 'SELECT 1'], { cwd: tempDir('cli-cwd') });
  assert.equal(elsewhere.code, 2);
  assert.ok(elsewhere.stderr.includes(join(repoRoot(), '.trialrun', 'data')), elsewhere.stderr);

  const store = tempDir('cli-store');
  await landRewards(store, 'run-a', 3);
  const unknownRun = await trialrun(['sql', '--data-dir', store, '--run', 'run-b', 'SELECT count(*) FROM rewards']);
  assert.equal(unknownRun.code, 2);
  assertOneLine(unknownRun, 'sql', /no rows for run "run-b" under .*; runs there: run-a/);

  // Every statement runs and prints its result, or the format that cannot hold several refuses.
  const several = await trialrun(['sql', '--data-dir', store, '--run', 'run-a', 'SELECT count(*)::INT AS n FROM rewards; SELECT 41 + 1 AS answer;']);
  assert.equal(several.code, 0, several.stderr);
  assert.match(several.stdout, /^n\n-\n3\n\(1 rows\)\n\nanswer\n-+\n42\n\(1 rows\)\n$/);
  assert.match(several.stderr, new RegExp(`^\\[sql\\] read ${store} \\(runs run-a\\)$`, 'm'), 'the data folder is printed');
  const csv = await trialrun(['sql', '--data-dir', store, '--format', 'csv', 'SELECT 1; SELECT 2']);
  assert.equal(csv.code, 2);
  assertOneLine(csv, 'sql', /--format csv takes one statement, got 2/);
});

test('an unreachable Kafka is one line naming KAFKA_BROKERS and the address, not the client retrying', { timeout: 120_000 }, async () => {
  const address = `127.0.0.1:${await closedPort()}`;
  for (const args of [['topics', 'create'], ['policy', 'list'], ['replay', '--topic', 'rewards', '--from', 'earliest', '--into', 'copy']]) {
    const run = await trialrun(args, { env: { KAFKA_BROKERS: address } });
    assert.equal(run.code, 1, `${args.join(' ')}: ${run.stderr}`);
    assertOneLine(run, args[0]!, new RegExp(`cannot reach Kafka at KAFKA_BROKERS=${address}: .*ECONNREFUSED`));
    assert.equal(run.stdout, '');
  }
});

test('replay refuses impossible ranges and missing topics before creating any, keeps --into under the prefix, and ends at 100%', { timeout: 240_000 }, async () => {
  const context = await freshContext('cli-replay');
  const prefix = context.names.prefix;
  const env = { TRIALRUN_TOPIC_PREFIX: prefix };
  const admin = context.kafka.admin();
  await admin.connect();
  const topicsNow = async (): Promise<string[]> => (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort();
  try {
    const before = await topicsNow();
    const refusals: Array<[string[], RegExp]> = [
      [['--from', '5', '--to', '2'], /--from offset 5 is after --to offset 2/],
      [['--from', '2999-01-01T00:00:00Z'], /--from 2999-01-01T00:00:00.000Z is in the future/],
      [['--from=-3'], /--from: "-3" is negative/],
      [['--from', 'earliest', '--to', '@99999999999999'], /--to .* is in the future/],
    ];
    for (const [range, message] of refusals) {
      const run = await trialrun(['replay', '--topic', 'rewards', '--into', 'copy', ...range], { env });
      assert.equal(run.code, 2, run.stderr);
      assertOneLine(run, 'replay', message);
    }
    const missing = await trialrun(['replay', '--topic', 'no-such-topic', '--from', 'earliest', '--into', 'copy'], { env });
    assert.equal(missing.code, 2);
    assertOneLine(missing, 'replay', /no topic "no-such-topic"/);
    const live = await trialrun(['replay', '--topic', 'rewards', '--from', 'earliest', '--into', 'verifications'], { env });
    assert.equal(live.code, 2);
    assertOneLine(live, 'replay', new RegExp(`--into verifications is the live topic ${prefix.replaceAll('.', '\\.')}verifications`));
    assert.deepEqual(await topicsNow(), before, 'no topic was created by a refused replay');

    // A processor on a prefix without its topics names them, instead of the broker's partition error.
    const bare = `it-cli-bare-${randomUUID().slice(0, 8)}.`;
    const processor = await trialrun(['run', 'reward'], { env: { TRIALRUN_TOPIC_PREFIX: bare } });
    assert.equal(processor.code, 2);
    assertOneLine(processor, 'run', new RegExp(`no topic "${bare.replaceAll('.', '\\.')}tasks", .*; create them with \`trialrun topics create\``));

    // Two transactions: their commit markers are offsets, not records, and must not hold progress short.
    const rewards = await Promise.all(Array.from({ length: 10 }, async (_, i) => ({ key: `k${i}`, value: await context.serde.encode('rewards', syntheticReward(i, { runId: 'cli' })) })));
    for (const half of [rewards.slice(0, 5), rewards.slice(5)]) {
      await inTransaction(context.kafka, `${prefix}cli-test`, (transaction) => transaction.send({ topic: context.names.name('rewards'), messages: half }));
    }
    const copy = await trialrun(['replay', '--topic', 'rewards', '--from', 'earliest', '--into', 'backfill'], { env });
    assert.equal(copy.code, 0, copy.stderr);
    assert.match(copy.stdout, new RegExp(`^copied 10 records ${prefix}rewards -> ${prefix}backfill;`));
    assert.match(copy.stderr.trimEnd().split('\n').at(-1)!, /10\/10 \(100%\)/, `the last progress line is complete:\n${copy.stderr}`);
    assert.ok((await topicsNow()).includes(`${prefix}backfill`), 'the copy lives under the prefix');

    // A range read reports its total before the first record and ends with records equal to the total.
    const calls: Array<[number, number]> = [];
    await readRange(createKafka(), { topic: context.names.name('rewards'), from: 'earliest', groupId: `${prefix}progress-check`, onRecord: () => undefined, onProgress: (done, total) => void calls.push([done, total]) });
    assert.equal(calls[0]![0], 0);
    assert.ok(calls[0]![1] >= 12, `before the read, the offsets in range: 10 records and a commit marker per transaction and partition (got ${calls[0]![1]})`);
    assert.deepEqual(calls.at(-1), [10, 10]);
    assert.ok(calls.every(([done, total]) => done <= total && total > 0), 'never "1 of 0"');
  } finally {
    await admin.disconnect();
  }
});
