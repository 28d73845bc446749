import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { LocalCheckpointStore, LORA_SAFETENSORS_FORMAT, type CheckpointArtifact } from '../../connectors/checkpoints/index.js';
import { LlamaCppClient } from '../../connectors/llm/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { makeEnv, PROGRAM_REPAIR } from '../../envs/index.js';
import { prepareTasks } from '../../pipelines/jobs/task-job/index.js';
import { PolicyTracker, runEpisode } from '../../pipelines/rollout-worker/index.js';
import type { ProcessorContext, StreamProcessor } from '../../pipelines/runtime/index.js';
import { createWeightSync } from '../../pipelines/weight-sync/index.js';
import { LLM_POLICY, resolveLlmPolicyOptions, seededRandom } from '../../policies/index.js';
import { nowIso, type PolicyCheckpoint, type PolicyPin, type TopicKey, type TopicValue } from '../../schemas/index.js';
import { daemonFiles, freePort, imageFor, llamaCppWeightServer, llmComponent, llmLearnerPython, stackUp } from '../../stack/index.js';
import { ensureStack, eventually, freshContext, readAll, tempDir } from './harness.js';

const run = promisify(execFile);

/**
 * Weight sync against a real llama.cpp server of this test's own (a free port, its own state folder: the
 * stack's shared server on 8090 is never restarted), with a LoRA adapter whose effect is known: a few AdamW
 * steps toward a fixed completion (llm-learner/tests/lora_fixture.py, transformers on the same GGUF), which
 * also computes the completion's logprobs under the base and under base + adapter. The server must report
 * those after each sync, within the tolerance of its quantised matmuls.
 */
const PROMPT = '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n';
const COMPLETION = 'Berlin, of';
/**
 * Per token, llama.cpp (Q4_1 weights, Q8 activations) against transformers (the same weights dequantised, float32):
 * 0.25 nats and 5% of the logprob (an unlikely token's, -10 here, moves most); the adapter moves the completion by more than 5.
 */
const tolerance = (expected: number): number => 0.25 + 0.05 * Math.abs(expected);

const stateDir = tempDir('weight-sync-state');
const storeRoot = tempDir('weight-sync-store');
const store = new LocalCheckpointStore(storeRoot);
const pool = new DockerSandboxPool();
let url = '';
let client: LlamaCppClient;
let promptIds: number[] = [];
let completionIds: number[] = [];
let fixture: { artifact: string; wrongBase: string; steps: number; baseLogprobs: number[]; adapterLogprobs: number[] };
let context: ProcessorContext;
let sync: StreamProcessor<'policyCheckpoints' | 'policyPins'>;
const served: number[] = [];

const serverOptions = () => ({ url, external: false, daemonName: 'llm-weight-sync-test', paths: { stateDir, cacheDir: join(process.env.HOME ?? '/root', '.cache', 'trialrun') }, parallel: 1, contextTokens: 2048 });

/** The server's logprob of each completion token after the prompt and the tokens before it (from its top logprobs). */
async function serverLogprobs(): Promise<number[]> {
  const logprobs: number[] = [];
  for (let i = 0; i < completionIds.length; i++) {
    const response = await fetch(`${url.replace(/\/v1$/, '')}/completion`, {
      method: 'POST',
      body: JSON.stringify({ prompt: [...promptIds, ...completionIds.slice(0, i)], n_predict: 1, n_probs: 2000, temperature: 0, return_tokens: true }),
    });
    const body = (await response.json()) as { completion_probabilities: Array<{ top_logprobs: Array<{ id: number; logprob: number }> }> };
    const entry = body.completion_probabilities[0]!.top_logprobs.find((p) => p.id === completionIds[i]);
    logprobs.push(entry ? entry.logprob : Number.NEGATIVE_INFINITY);
  }
  return logprobs;
}

const servedModel = async (): Promise<string> => ((await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;

function assertClose(actual: number[], expected: number[], what: string): void {
  assert.equal(actual.length, expected.length);
  for (const [i, value] of actual.entries()) assert.ok(Math.abs(value - expected[i]!) < tolerance(expected[i]!), `${what}: token ${i} logprob ${value} vs ${expected[i]} (transformers)`);
}

async function publish<K extends 'policyCheckpoints' | 'policyPins'>(key: K, value: TopicValue<K>): Promise<void> {
  const producer = context.kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: context.names.name(key as TopicKey), messages: [{ key: LLM_POLICY, value: await context.serde.encode(key, value) }] });
  } finally {
    await producer.disconnect();
  }
}

function checkpoint(version: number, artifact: CheckpointArtifact): PolicyCheckpoint {
  return {
    policyId: LLM_POLICY,
    version,
    parentVersion: version - 1,
    featureNames: [],
    weights: [],
    sha256: artifact.sha256,
    artifact,
    metrics: { samples: 1, meanReward: 1, meanAbsAdvantage: 1, gradNorm: 0, staleDropped: 0, extra: { loss: 0 } },
    lineage: { taskId: 'all', attempt: 0, runId: 'weight-sync-it', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
}

/** `trialrun policy ...` on this test's topics and checkpoint store. */
async function policyCli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [join(repoRoot(), 'bin', 'trialrun.js'), 'policy', ...args, '--policy', LLM_POLICY], {
    env: { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: storeRoot },
  });
  return stdout;
}

before(async () => {
  await ensureStack();
  url = `http://127.0.0.1:${await freePort()}/v1`;
  await stackUp((line) => console.log(`# ${line}`), [llmComponent(serverOptions())]);
  client = new LlamaCppClient({ rootUrl: url.replace(/\/v1$/, '') });
  promptIds = await client.tokenize(PROMPT, false);
  completionIds = await client.tokenize(COMPLETION, false);
  const props = (await (await fetch(`${url.replace(/\/v1$/, '')}/props`)).json()) as { model_path: string };
  const python = await llmLearnerPython((line) => console.log(`# ${line}`), { logFile: join(stateDir, 'learner-venv.log') });
  const out = tempDir('weight-sync-fixture');
  const { stdout } = await run(python, [join(repoRoot(), 'llm-learner', 'tests', 'lora_fixture.py'), '--base', props.model_path, '--prompt-ids', JSON.stringify(promptIds), '--completion-ids', JSON.stringify(completionIds), '--out-dir', out], { timeout: 900_000, maxBuffer: 1 << 24 });
  fixture = JSON.parse(stdout.trim().split('\n').pop()!) as typeof fixture;
  console.log(`# fixture: ${fixture.steps} AdamW steps; completion logprob ${sum(fixture.baseLogprobs).toFixed(2)} -> ${sum(fixture.adapterLogprobs).toFixed(2)}`);
  context = await freshContext('weight-sync');
  sync = createWeightSync(context, {
    server: llamaCppWeightServer({ ...serverOptions(), workDir: join(stateDir, 'adapters') }),
    store,
    onServed: (version) => served.push(version),
  });
  await sync.start();
}, { timeout: 1_800_000 });

after(async () => {
  await sync?.stop();
  await llmComponent(serverOptions()).stop(() => {});
  await pool.close();
});

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

test('a published checkpoint is served with the weights it dictates, turns after the sync carry its version, rollbacks reload, bad artifacts are dead letters', { timeout: 1_800_000 }, async () => {
  // v0: the base model, as transformers computes it.
  assert.equal(await servedModel(), 'smollm2-135m-instruct');
  assertClose(await serverLogprobs(), fixture.baseLogprobs, 'base model');
  assert.ok(sum(fixture.adapterLogprobs) - sum(fixture.baseLogprobs) > 5, 'the adapter has a strong effect');

  const v1 = await store.put(LLM_POLICY, 1, await readFile(fixture.artifact), LORA_SAFETENSORS_FORMAT);
  await publish('policyCheckpoints', checkpoint(1, v1));
  await eventually('the server to serve v1', async () => (await servedModel().catch(() => '')) === 'smollm2-135m-instruct@v1', 600_000, 1000);
  assertClose(await serverLogprobs(), fixture.adapterLogprobs, 'v1');

  // A rollout after the sync: the tracker follows v1 and every model turn carries the version the server named.
  const llm = resolveLlmPolicyOptions({ baseUrl: url, server: 'llama.cpp', maxTokensPerTurn: 48, concurrentEpisodes: 1 }, {});
  const tracker = await PolicyTracker.follow(context.kafka, context.serde, context.names, { store, policyId: LLM_POLICY, settings: { llm } });
  try {
    await eventually('the tracker to follow v1', async () => tracker.current().version === 1);
    const [task] = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('weight-sync-rejects') })).tasks;
    const env = makeEnv(task!.envId, { pool, runId: 'weight-sync-it', imageFor, maxTurns: 1 });
    const episode = await runEpisode(PROGRAM_REPAIR, env, () => env.init(task!), tracker.current(), seededRandom('weight-sync'), new AbortController().signal);
    const turns = episode.steps.filter((step) => step.llm !== null);
    assert.ok(turns.length >= 1, 'at least one model turn');
    assert.deepEqual(turns.map((step) => [step.llm!.model, step.llm!.policyVersion]), turns.map(() => ['smollm2-135m-instruct@v1', 1]));
  } finally {
    await tracker.close();
  }

  // trialrun policy rollback: the pin travels to weight sync, which reloads the pinned weights.
  assert.match(await policyCli('rollback', '0'), /pinned llm to v0/);
  await eventually('the server to serve v0 again', async () => (await servedModel().catch(() => '')) === 'smollm2-135m-instruct', 600_000, 1000);
  assertClose(await serverLogprobs(), fixture.baseLogprobs, 'rolled back to v0');
  assert.match(await policyCli('rollback', '1'), /pinned llm to v1/);
  await eventually('the server to serve v1 again', async () => (await servedModel().catch(() => '')) === 'smollm2-135m-instruct@v1', 600_000, 1000);
  assertClose(await serverLogprobs(), fixture.adapterLogprobs, 'rolled back to v1');
  assert.match(await policyCli('unpin'), /follows the newest version again/);

  // Bad artifacts: trained on other base weights; bytes that fail their digest. Dead letters, never applied.
  const otherBase = await store.put(LLM_POLICY, 2, await readFile(fixture.wrongBase), LORA_SAFETENSORS_FORMAT);
  await publish('policyCheckpoints', checkpoint(2, otherBase));
  const tampered = await store.put(LLM_POLICY, 3, Buffer.concat([await readFile(fixture.artifact), Buffer.from('x')]), LORA_SAFETENSORS_FORMAT);
  const path = new URL(tampered.uri);
  await writeFile(path, (await readFile(path)).subarray(1));
  await publish('policyCheckpoints', checkpoint(3, tampered));
  let letters: Array<TopicValue<'deadLetters'>> = [];
  await eventually('two dead letters from weight sync', async () => {
    letters = (await readAll(context, 'deadLetters')).filter((letter) => letter.processor === 'weight-sync');
    return letters.length >= 2;
  }, 300_000, 1000);
  assert.equal(letters.length, 2);
  assert.match(letters[0]!.error.message, /checkpoint v2 was trained on base weights sha256 0{64}; the llama\.cpp server loads [0-9a-f]{64}/);
  assert.equal(letters[0]!.error.name, 'IncompatibleAdapterError');
  assert.match(letters[1]!.error.message, /fails its sha256 check/);
  assert.equal(letters[1]!.error.name, 'ArtifactIntegrityError');
  assert.equal(await servedModel(), 'smollm2-135m-instruct@v1', 'the server still serves v1');
  assertClose(await serverLogprobs(), fixture.adapterLogprobs, 'after the bad artifacts');
  // v1, v0 (pin), v1 (pin), v1 (unpin: already served, no restart).
  assert.deepEqual(served, [1, 0, 1, 1]);

  // An experiment's evaluation takes every core and gives half back: another weight-server object (another process,
  // which did not launch the server) restarts it on other threads with the weights it served, the adapter kept.
  const threadsOfServer = async (): Promise<string> => {
    const pid = (await readFile(daemonFiles(stateDir, serverOptions().daemonName).pidFile, 'utf8')).trim();
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    return args[args.indexOf('--threads') + 1]!;
  };
  const evaluation = llamaCppWeightServer({ ...serverOptions(), workDir: join(stateDir, 'adapters') });
  for (const threads of [2, 1]) {
    await evaluation.useThreads!(threads, new AbortController().signal);
    assert.equal(await threadsOfServer(), String(threads));
    assert.equal(await servedModel(), 'smollm2-135m-instruct@v1');
    assertClose(await serverLogprobs(), fixture.adapterLogprobs, `v1 on ${threads} threads`);
  }
  await assert.rejects(evaluation.useThreads!(0, new AbortController().signal), /threads must be a whole number >= 1, got 0/);
});
