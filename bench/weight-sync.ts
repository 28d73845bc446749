/**
 * Weight-sync latency: `npm run bench:weight-sync [-- --rounds 3]`.
 *
 * A llama.cpp server of the bench's own (a free port, its own state folder: the stack's shared server is never
 * restarted) and the weight-sync processor on fresh topics. Per round, two sides in turn (interleaved):
 *   1. sync: a new checkpoint version is published to the checkpoint topic (its artifact in the store), and
 *      the clock runs until weight sync reports it served (the restarted server answering `/v1/models` with
 *      that version's name): Kafka, the artifact's digest and header checks, the GGUF conversion
 *      (llm-learner's gguf_lora), the restart with `--lora`;
 *   2. bare restart: the same server stopped and started again (no Kafka, no conversion), until it answers.
 * The adapter is a LoRA with r=4 on every projection from llm-learner/tests/lora_fixture.py (one AdamW step), or
 * the lora-safetensors/v1 file --adapter names (trained on the same GGUF); each round's version is the same
 * tensors with its own `policy_version` in the metadata.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../cli/paths.js';
import { LocalCheckpointStore, LORA_SAFETENSORS_FORMAT } from '../connectors/checkpoints/index.js';
import { createWeightSync } from '../pipelines/weight-sync/index.js';
import { LLM_POLICY } from '../policies/index.js';
import { nowIso, type PolicyCheckpoint } from '../schemas/index.js';
import { freePort, llamaCppWeightServer, llmComponent, llmLearnerPython, stackUp } from '../stack/index.js';
import { ensureStack, freshContext, tempDir } from '../test/integration/harness.js';
import { benchArgs, BenchReport, interleave } from './harness.js';

const run = promisify(execFile);
const cli = benchArgs(
  'bench:weight-sync',
  'npm run bench:weight-sync [-- --rounds 3 --adapter <lora.safetensors>]',
  { rounds: { type: 'string', default: '3' }, adapter: { type: 'string' } },
);
const { values } = cli;
const ROUNDS = cli.int('rounds', 3);

/** The same safetensors file with `policy_version` (and `parent_version`) set to `version` in its metadata. */
function withVersion(bytes: Buffer, version: number): Buffer {
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString('utf8')) as { __metadata__: Record<string, string> };
  header.__metadata__ = { ...header.__metadata__, policy_version: String(version), parent_version: String(version - 1) };
  // Tensor offsets are relative to the end of the header, so a header of another length moves nothing.
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([prefix, json, bytes.subarray(8 + length)]);
}

await ensureStack();
const stateDir = tempDir('bench-weight-sync');
const url = `http://127.0.0.1:${await freePort()}/v1`;
const serverOptions = { url, external: false, daemonName: 'llm-weight-sync-bench', paths: { stateDir, cacheDir: join(process.env.HOME ?? '/root', '.cache', 'trialrun') }, parallel: 1, contextTokens: 2048 };
const component = llmComponent(serverOptions);
await stackUp((line) => console.log(`# ${line}`), [component]);
const servedModel = async (): Promise<string> => {
  try {
    return ((await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;
  } catch {
    return '';
  }
};

const props = (await (await fetch(`${url.replace(/\/v1$/, '')}/props`)).json()) as { model_path: string };
async function fixtureAdapter(): Promise<string> {
  const python = await llmLearnerPython((line) => console.log(`# ${line}`), { logFile: join(stateDir, 'learner-venv.log') });
  const args = ['--base', props.model_path, '--prompt-ids', '[1, 520, 9531, 198]', '--completion-ids', '[24726]', '--out-dir', tempDir('bench-weight-sync-fixture'), '--max-steps', '1', '--target-logprob', '0'];
  const { stdout } = await run(python, [join(repoRoot(), 'llm-learner', 'tests', 'lora_fixture.py'), ...args], { timeout: 1_800_000, maxBuffer: 1 << 24 });
  return (JSON.parse(stdout.trim().split('\n').pop()!) as { artifact: string }).artifact;
}
const adapter = await readFile(values.adapter ?? (await fixtureAdapter()));

const report = new BenchReport('weight-sync', `npm run bench:weight-sync -- --rounds ${ROUNDS}${values.adapter ? ` --adapter ${values.adapter}` : ''}`);
const context = await freshContext('bench-weight-sync');
const store = new LocalCheckpointStore(tempDir('bench-weight-sync-store'));
// Serving is what weight sync reports once the restarted server answers with the version (not the first
// answer of the new name: the sync may still be checking it, and the restart side must not stop it then).
const servedWaiters = new Map<number, () => void>();
const sync = createWeightSync(context, { server: llamaCppWeightServer({ ...serverOptions, workDir: join(stateDir, 'adapters') }), store, onServed: (v) => servedWaiters.get(v)?.() });
await sync.start();
const producer = context.kafka.producer();
await producer.connect();
let version = 0;
try {
  const rounds = await interleave(
    {
      sync: async () => {
        version++;
        const artifact = await store.put(LLM_POLICY, version, withVersion(adapter, version), LORA_SAFETENSORS_FORMAT);
        const checkpoint: PolicyCheckpoint = {
          policyId: LLM_POLICY, version, parentVersion: version - 1, featureNames: [], weights: [], sha256: artifact.sha256, artifact,
          metrics: { samples: 1, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
          lineage: { taskId: 'all', attempt: 0, runId: 'bench-weight-sync', policyVersion: version, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
        };
        const value = await context.serde.encode('policyCheckpoints', checkpoint);
        const served = new Promise<void>((resolve) => servedWaiters.set(version, resolve));
        const started = performance.now();
        await producer.send({ topic: context.names.name('policyCheckpoints'), messages: [{ key: LLM_POLICY, value }] });
        await served;
        const seconds = (performance.now() - started) / 1000;
        if ((await servedModel()) !== `smollm2-135m-instruct@v${version}`) throw new Error(`weight sync reported v${version} served, but the server names ${await servedModel()}`);
        return seconds;
      },
      restart: async () => {
        const started = performance.now();
        await component.stop(() => {});
        await component.ensure(() => {});
        const seconds = (performance.now() - started) / 1000;
        // ensure() starts the base model (its own answer is awaited inside); the next sync round restarts it with its adapter anyway.
        return seconds;
      },
    },
    { rounds: ROUNDS, warmup: 1, onRound: (round, v) => console.log(`# round ${round}: sync ${v.sync!.toFixed(1)} s, bare restart ${v.restart!.toFixed(1)} s`) },
  );
  report.compare({ metric: 'checkpoint publish -> server serving the new weights (llama.cpp)', unit: 's', ours: rounds.sync, baseline: rounds.restart, baselineName: 'bare server restart', higherIsBetter: false });
  report.save();
} finally {
  await producer.disconnect();
  await sync.stop();
  await component.stop(() => {});
}
