import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../cli/paths.js';
import { readLoraArtifact } from '../../connectors/checkpoints/index.js';
import { LlamaCppClient, servedModelPath, WEIGHT_SERVER_KINDS, type ServedAdapter, type WeightServer, type WeightServerKind } from '../../connectors/llm/index.js';
import { freePort, llamaCppWeightServer, llmComponent, llmLearnerPython, stackUp, type LlamaCppWeightServerOptions } from '../../stack/index.js';
import { tempDir } from './harness.js';

const run = promisify(execFile);
const signal = new AbortController().signal;

/**
 * The contract every WeightServer keeps (connectors/llm/weight-server.ts), run against each server kind that can run
 * here. Each case starts its server and hands over real adapters trained on the base that server loads.
 *
 * - llama.cpp: a server of the stack's own launcher (`llmComponent`, SmolLM2-135M) on a free port with its own state
 *   folder, so that the stack's shared server on 8090 is never restarted; the adapters come from
 *   llm-learner/tests/lora_fixture.py (peft on the same GGUF through transformers).
 * - vLLM and SGLang cannot run here: both need a CUDA GPU and a model in the HF layout, and the stack installs neither.
 *   Their weight servers are pinned against their documented HTTP APIs in connectors/llm/weights.test.ts; where one
 *   runs, its case goes into CASES below.
 */
interface ContractCase {
  readonly kind: WeightServerKind;
  /** Starts the server; the weight server, adapters that fit its base and one that does not. */
  start(): Promise<{ server: WeightServer; fits: Buffer; otherBase: Buffer; close(): Promise<void> }>;
  /** A weight server of this kind whose server does not answer. */
  unreachable(): Promise<WeightServer>;
}

const llamaCppCase: ContractCase = {
  kind: 'llama.cpp',
  async start() {
    const stateDir = tempDir('weight-server-contract');
    const options: LlamaCppWeightServerOptions = {
      url: `http://127.0.0.1:${await freePort()}/v1`,
      external: false,
      daemonName: 'llm-weight-server-contract',
      paths: { stateDir, cacheDir: join(process.env.HOME ?? '/root', '.cache', 'trialrun') },
      parallel: 1,
      contextTokens: 1024,
      threads: 1,
    };
    await stackUp((line) => console.log(`# ${line}`), [llmComponent(options)]);
    const root = options.url!.replace(/\/v1$/, '');
    const client = new LlamaCppClient({ rootUrl: root });
    const gguf = await servedModelPath(root);
    assert.ok(gguf, 'the stack\'s llama.cpp server names the GGUF it loads');
    const python = await llmLearnerPython((line) => console.log(`# ${line}`), { logFile: join(stateDir, 'learner-venv.log') });
    const out = tempDir('weight-server-contract-fixture');
    // Two AdamW steps: any adapter trained on this base will do, the contract is about which version is served.
    const { stdout } = await run(python, [
      join(repoRoot(), 'llm-learner', 'tests', 'lora_fixture.py'),
      '--base', gguf,
      '--prompt-ids', JSON.stringify(await client.tokenize('Hello', false)),
      '--completion-ids', JSON.stringify(await client.tokenize(' world', false)),
      '--out-dir', out,
      '--max-steps', '2',
    ], { timeout: 900_000, maxBuffer: 1 << 24 });
    const fixture = JSON.parse(stdout.trim().split('\n').pop()!) as { artifact: string; wrongBase: string };
    return {
      server: llamaCppWeightServer({ ...options, workDir: join(stateDir, 'adapters') }),
      fits: await readFile(fixture.artifact),
      otherBase: await readFile(fixture.wrongBase),
      close: async () => void (await llmComponent(options).stop(() => {})),
    };
  },
  async unreachable() {
    return llamaCppWeightServer({ url: `http://127.0.0.1:${await freePort()}/v1`, external: false, daemonName: 'llm-weight-server-gone', paths: { stateDir: tempDir('weight-server-gone'), cacheDir: tempDir('weight-server-gone-cache') } });
  },
};

const CASES: readonly ContractCase[] = [llamaCppCase];

/** An adapter's bytes served as `version` (the server cares which version it is told, not which the file says). */
const served = (bytes: Buffer, version: number): ServedAdapter => ({ version, bytes, info: readLoraArtifact(bytes) });

for (const contractCase of CASES) {
  describe(`WeightServer contract: ${contractCase.kind}`, () => {
    let started: Awaited<ReturnType<ContractCase['start']>>;
    before(async () => {
      started = await contractCase.start();
    }, { timeout: 1_800_000 });
    after(async () => started?.close());

    it('names its kind, and the base it loads is the one the adapters were trained on (or says it does not know)', async () => {
      const { server, fits } = started;
      assert.equal(server.kind, contractCase.kind);
      assert.ok(WEIGHT_SERVER_KINDS.includes(server.kind));
      const base = await server.baseSha256();
      assert.ok(base === null || base === readLoraArtifact(fits).baseSha256, `base ${base} vs the adapter's ${readLoraArtifact(fits).baseSha256}`);
    });

    it('serves the base model as version 0, each adapter under its version, and rolls back to an earlier one', async () => {
      const { server, fits } = started;
      const versions: Array<number | null> = [];
      for (const adapter of [null, served(fits, 1), served(fits, 2), served(fits, 1), null]) {
        await server.serve(adapter, signal);
        versions.push(await server.servedVersion(signal));
      }
      assert.deepEqual(versions, [0, 1, 2, 1, 0]);
    });

    it('refuses an adapter trained on other weights and keeps serving what it served', async () => {
      const { server, fits, otherBase } = started;
      await server.serve(served(fits, 3), signal);
      await assert.rejects(server.serve(served(otherBase, 4), signal));
      assert.equal(await server.servedVersion(signal), 3);
    });

    it('keeps the version it serves when its threads change (where they are its to set)', async () => {
      const { server } = started;
      if (!server.useThreads) return;
      const before = await server.servedVersion(signal);
      await server.useThreads(2, signal);
      assert.equal(await server.servedVersion(signal), before);
      await assert.rejects(server.useThreads(0, signal), /threads must be a whole number >= 1, got 0/);
    });

    it('reports no served version for a server that does not answer', async () => {
      assert.equal(await (await contractCase.unreachable()).servedVersion(signal), null);
    });
  });
}
