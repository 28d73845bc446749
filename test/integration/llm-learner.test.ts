import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import type { PolicyCheckpoint } from '../../schemas/index.js';
import { childExit, stackComponents, stackUp, stopChild } from '../../stack/index.js';
import { llmLearnerArgs, llmLearnerLaunch, llmLearnerVenv, llmServerRoot, servedGguf } from '../../cli/llm-learner.js';
import { repoRoot } from '../../cli/paths.js';
import { committedPastEnd, eventually, freshContext, readAll, sendRaw, tempDir } from './harness.js';
import { llmSamplePair, sendPairs, tokenizedTurns, type LlmSamplePair, type SampledTurns } from './llm-learner-fixtures.js';

let python: string;
let gguf: string;
/** Replies to a short prompt as the served model's token ids. */
let turns: SampledTurns;

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), stackComponents({ llm: true }));
  python = await llmLearnerVenv();
  gguf = await servedGguf(llmServerRoot());
  turns = await tokenizedTurns(llmServerRoot(), ['Yes.', 'No.', 'Yes, I think so.']);
}, { timeout: 1_200_000 });

const samplePair = (i: number): LlmSamplePair => llmSamplePair(turns, i, { runId: 'llm-learner-it' });

/** Tells when a learner process has said `line` on stderr (which it also passes on to the test's). */
function watch(child: ChildProcess, label: string): (line: RegExp) => boolean {
  let said = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    said += chunk.toString();
    process.stderr.write(`# ${label} ${child.pid}: ${chunk.toString()}`);
  });
  return (line) => line.test(said);
}

/** The safetensors header's `__metadata__` (8-byte little-endian length, then JSON). */
function safetensorsMetadata(data: Buffer): Record<string, string> {
  const length = Number(data.readBigUInt64LE(0));
  return (JSON.parse(data.toString('utf8', 8, 8 + length)) as { __metadata__: Record<string, string> }).__metadata__;
}

async function checkArtifacts(checkpoints: string, published: PolicyCheckpoint[]): Promise<void> {
  const store = new LocalCheckpointStore(checkpoints);
  const baseSha256 = createHash('sha256').update(readFileSync(gguf)).digest('hex');
  for (const c of published) {
    assert.equal(c.artifact?.format, 'lora-safetensors/v1');
    assert.equal(c.sha256, c.artifact!.sha256);
    const data = await store.get(c.artifact!); // checks the sha256
    const metadata = safetensorsMetadata(data);
    assert.deepEqual(
      { format: metadata.format, policy_version: metadata.policy_version, parent_version: metadata.parent_version, base_sha256: metadata.base_sha256, base_model: metadata.base_model },
      { format: 'lora-safetensors/v1', policy_version: String(c.version), parent_version: String(c.parentVersion), base_sha256: baseSha256, base_model: 'smollm2-135m-instruct' },
    );
    assert.equal((JSON.parse(metadata.peft_config!) as { r: number }).r, 8);
    assert.ok(c.metrics.extra.tokens! > 0 && c.metrics.gradNorm > 0, `v${c.version} trained on tokens`);
  }
}

test('trialrun run llm-learner reads what TypeScript writes, publishes checkpoints TypeScript reads, dead-letters a bad record, and exits 0 on SIGTERM', { timeout: 900_000 }, async () => {
  const context = await freshContext('llm-learner');
  const checkpoints = tempDir('llm-learner-ckpt');
  await sendPairs(context, [samplePair(0), samplePair(1)]);
  await sendRaw(context, 'rewards', [{ key: 'poison', value: Buffer.from('not a registry record') }]);
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'run', 'llm-learner', '--batch-size', '2', '--session-timeout-ms', '10000', '--gguf', gguf, '--', '--threads', '2'], {
    env: { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: checkpoints },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  watch(child, 'llm-learner');
  let status: number;
  try {
    await eventually('checkpoint v1', async () => (await readAll(context, 'policyCheckpoints')).length >= 1, 600_000, 2000);
    const [checkpoint] = await readAll(context, 'policyCheckpoints');
    assert.equal(checkpoint!.policyId, 'llm');
    assert.deepEqual([checkpoint!.version, checkpoint!.parentVersion, checkpoint!.metrics.samples, checkpoint!.metrics.staleDropped], [1, 0, 2, 0]);
    assert.equal(checkpoint!.metrics.meanAbsAdvantage, 1);
    assert.equal(checkpoint!.metrics.extra.tokens, turns.completions[0]!.completionIds.length + turns.completions[1]!.completionIds.length);
    await checkArtifacts(checkpoints, [checkpoint!]);
    const [letter] = await readAll(context, 'deadLetters');
    assert.equal(letter?.processor, 'llm-learner');
    assert.equal(letter?.error.stage, 'decode');
    assert.equal(Buffer.from(letter!.value!, 'base64').toString(), 'not a registry record');
  } finally {
    // A learner stuck in a call, which never gets back to the flag SIGTERM sets, is killed with its group
    // (spawned detached) after 3 minutes: it cannot keep this file, and the suite after it, from finishing.
    status = await stopChild(child, { graceMs: 180_000, group: true });
  }
  assert.equal(status, 0, 'the launcher passes SIGTERM on and exits with the learner\'s status within 3 minutes');
});

test('an LLM learner SIGKILLed at random moments resumes without losing or double-counting a batch', { timeout: 1_800_000 }, async () => {
  const context = await freshContext('llm-learner-kill');
  const checkpoints = tempDir('llm-learner-kill-ckpt');
  const pairs = Array.from({ length: 6 }, (_, i) => samplePair(i));
  const env = { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: checkpoints };
  // The Python process itself, so the SIGKILL reaches the learner and not a launcher in front of it.
  const args = llmLearnerArgs(llmLearnerLaunch({ gguf, runId: 'llm-learner-it', batchSize: 2, sessionTimeoutMs: 10_000, extraArgs: ['--threads', '2'] }, env));
  const start = (): { child: ChildProcess; said: (line: RegExp) => boolean } => {
    const child = spawn(python, args, { cwd: join(repoRoot(), 'llm-learner'), env: { ...env, PYTHONPATH: join(repoRoot(), 'llm-learner') }, stdio: ['ignore', 'ignore', 'pipe'] });
    return { child, said: watch(child, 'llm-learner') };
  };
  let learner = start();
  const kills: string[] = [];
  for (let burst = 0; burst < 3; burst++) {
    await sendPairs(context, pairs.slice(burst * 2, burst * 2 + 2));
    await eventually('the learner to run', async () => learner.said(/running on/), 600_000, 500);
    // An update takes a minute or two here: a kill timed from the start lands mid-update, so one burst waits
    // for a commit first and kills within seconds of it (restoring, consuming, or early in the next update).
    if (burst === 1) await eventually('checkpoint v1', async () => (await readAll(context, 'policyCheckpoints')).length >= 1, 900_000, 1000);
    const delayMs = Math.round(Math.random() * (burst === 1 ? 20_000 : 90_000));
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    kills.push(`burst ${burst}: +${delayMs} ms`);
    learner.child.kill('SIGKILL');
    await childExit(learner.child);
    learner = start();
  }
  console.log(`# killed at ${kills.join(', ')}`);
  try {
    await eventually('three checkpoints', async () => (await readAll(context, 'policyCheckpoints')).length >= 3, 900_000, 2000);
    // Past every input, no further (or repeated) checkpoint can appear: each commits with its inputs' offsets.
    const groupId = `${context.names.prefix}llm-learner`;
    await eventually('the learner to commit past every input', async () => (await committedPastEnd(context, groupId, 'trajectories')) && committedPastEnd(context, groupId, 'rewards'), 300_000, 2000);
    const published = await readAll(context, 'policyCheckpoints');
    assert.deepEqual(published.map((c) => c.version), [1, 2, 3], 'one checkpoint per batch, none repeated');
    for (const [i, c] of published.entries()) assert.equal(c.parentVersion, i);
    assert.equal(published.reduce((sum, c) => sum + c.metrics.samples + (c.metrics.extra.staleTrajectories ?? 0), 0), 6, 'every sample counted exactly once');
    await checkArtifacts(checkpoints, published);
  } finally {
    await stopChild(learner.child, { graceMs: 180_000 });
  }
});
