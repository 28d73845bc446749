import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { saveExperiment, type ExperimentReport } from '../../cli/experiment.js';
import { repoRoot } from '../../cli/paths.js';
import { S3BlobStore } from '../../connectors/storage/index.js';
import { s3Component, stackUp } from '../../stack/index.js';

/**
 * A wrong s3:// location, bucket or credential stops a processor with one line naming what is wrong, before it
 * connects to Kafka or consumes anything (issue 42: "Wrong credentials or bucket: one line at start"). The brokers
 * point at a closed port, so a command that got as far as Kafka would fail with another message.
 */
before(() => stackUp((line) => console.log(`# ${line}`), [s3Component()]));

function runLearner(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', 'learner'], {
    env: { ...process.env, KAFKA_BROKERS: '127.0.0.1:9', TRIALRUN_DEBUG: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const err: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr: Buffer.concat(err).toString() }));
  });
}

const CASES: Array<[string, Record<string, string>, RegExp]> = [
  ['a malformed bucket name', { TRIALRUN_CHECKPOINTS: 's3://Not_A_Bucket/checkpoints' }, /TRIALRUN_CHECKPOINTS: "Not_A_Bucket" in s3:\/\/Not_A_Bucket\/checkpoints is not an S3 bucket name/],
  ['a bucket that does not exist', { TRIALRUN_ARTIFACTS: `s3://missing-${randomUUID().slice(0, 8)}/trees` }, /s3:\/\/missing-\w+\/trees at http:\/\/127\.0\.0\.1:8433: bucket "missing-\w+" does not exist/],
  ['refused credentials', { TRIALRUN_CHECKPOINTS: 's3://trialrun/checkpoints', AWS_ACCESS_KEY_ID: 'trialrun', AWS_SECRET_ACCESS_KEY: 'wrong' }, /refused the credentials .*check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/],
  ['a lake on a bucket that does not exist', { TRIALRUN_LAKE: `s3://missing-${randomUUID().slice(0, 8)}/lake` }, /s3:\/\/missing-\w+\/lake at http:\/\/127\.0\.0\.1:8433: bucket "missing-\w+" does not exist/],
  ['experiment reports on a bucket that does not exist', { TRIALRUN_EXPERIMENTS: `s3://missing-${randomUUID().slice(0, 8)}/reports` }, /s3:\/\/missing-\w+\/reports at http:\/\/127\.0\.0\.1:8433: bucket "missing-\w+" does not exist/],
  ['an endpoint that is an s3:// URL', { TRIALRUN_CHECKPOINTS: 's3://trialrun/checkpoints', TRIALRUN_S3_URL: 's3://trialrun' }, /TRIALRUN_S3_URL .* is not http\(s\)/],
];

for (const [what, env, message] of CASES) {
  test(`run learner with ${what}: one line naming it, exit 2, before Kafka`, async () => {
    const { code, stderr } = await runLearner(env);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /^trialrun run: [^\n]*\n$/, stderr);
    assert.match(stderr, message);
    assert.doesNotMatch(stderr, /KAFKA_BROKERS|\n\s+at /);
  });
}

test('an experiment report goes to TRIALRUN_EXPERIMENTS on S3, created once, and to <data>/experiments by default', async () => {
  const report = { runId: `learn-${randomUUID().slice(0, 8)}`, kind: 'learn' } as unknown as ExperimentReport;
  const prefix = `s3://trialrun/it-experiments-${randomUUID().slice(0, 8)}`;
  const uri = await saveExperiment(report, '/nonexistent', { ...process.env, TRIALRUN_EXPERIMENTS: prefix });
  assert.equal(uri, `${prefix}/${report.runId}.json`);
  assert.equal(await saveExperiment(report, '/nonexistent', { ...process.env, TRIALRUN_EXPERIMENTS: prefix }), uri, 'the same report again is the same object');
  const store = new S3BlobStore(prefix);
  try {
    const head = await store.head(`${report.runId}.json`);
    assert.deepEqual(JSON.parse((await store.get(`${report.runId}.json`, head!.sha256!)).toString()), report);
  } finally {
    store.close();
  }
  const data = mkdtempSync(join(tmpdir(), 'trialrun-experiments-'));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TRIALRUN_EXPERIMENTS;
  const file = await saveExperiment(report, data, env);
  assert.equal(file, join(data, 'experiments', `${report.runId}.json`));
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), report);
});
