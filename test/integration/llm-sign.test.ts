import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { llmServerRoot, servedGguf } from '../../cli/llm-learner.js';
import { repoRoot } from '../../cli/paths.js';
import { LocalCheckpointStore } from '../../connectors/checkpoints/index.js';
import { LlamaCppClient } from '../../connectors/llm/index.js';
import type { ProcessorContext, StreamProcessor } from '../../pipelines/runtime/index.js';
import { createWeightSync } from '../../pipelines/weight-sync/index.js';
import { childExit, freePort, llamaCppWeightServer, llmComponent, stackComponents, stackUp, stopChild } from '../../stack/index.js';
import { eventually, freshContext, readAll, tempDir } from './harness.js';
import { llmSamplePair, sendPairs, type SampledTurns } from './llm-learner-fixtures.js';

/**
 * The loop cannot hide a sign error: on a fixed batch (two replies to a task rewarded +1, two -1), one update of the
 * real Python learner, published as a checkpoint and applied by the real weight sync to a llama.cpp server of this
 * test's own, must raise llama.cpp's own logprob of the rewarded replies and lower that of the punished ones. A flipped
 * advantage, a mask off by one, or an adapter served but not applied each fails it.
 */
const PROMPT = '`xs` is a list of integers. Write one Python expression that evaluates to the sum of the numbers in xs that are greater than 4. Reply with the expression only.';
/** Bad and good replies alternate: llmSamplePair gives odd indices advantage +1, even ones -1. */
const REPLIES = ['I do not know.', 'sum(x for x in xs if x > 4)', 'The answer is 42.', '```python\nsum([x for x in xs if x > 4])\n```'];

const stateDir = tempDir('llm-sign-state');
const checkpoints = tempDir('llm-sign-ckpt');
let url = '';
let root = '';
let gguf = '';
let turns: SampledTurns;
let context: ProcessorContext;
let sync: StreamProcessor<'policyCheckpoints' | 'policyPins'>;
const served: number[] = [];

const serverOptions = () => ({ url, external: false, daemonName: 'llm-sign-test', paths: { stateDir, cacheDir: join(process.env.HOME ?? '/root', '.cache', 'trialrun') }, parallel: 1, contextTokens: 1024 });

/** llama.cpp's own logprob (temperature 1) of each token of `completion` after the prompt and the tokens before it, from its top logprobs. */
async function servedLogprobs(promptIds: readonly number[], completion: readonly number[]): Promise<number[]> {
  const logprobs: number[] = [];
  for (let i = 0; i < completion.length; i++) {
    const response = await fetch(`${root}/completion`, { method: 'POST', body: JSON.stringify({ prompt: [...promptIds, ...completion.slice(0, i)], n_predict: 1, n_probs: 4000, temperature: 0, return_tokens: true }) });
    const body = (await response.json()) as { completion_probabilities: Array<{ top_logprobs: Array<{ id: number; logprob: number }> }> };
    const entry = body.completion_probabilities[0]!.top_logprobs.find((p) => p.id === completion[i]);
    assert.ok(entry, `token ${completion[i]} (position ${i}) is not among the server's 4000 most likely`);
    logprobs.push(entry.logprob);
  }
  return logprobs;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
const servedModel = async (): Promise<string> => ((await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> }).data[0]!.id;

before(async () => {
  await stackUp((line) => console.log(`# ${line}`), stackComponents({ llm: true }));
  gguf = await servedGguf(llmServerRoot());
  url = `http://127.0.0.1:${await freePort()}/v1`;
  root = url.replace(/\/v1$/, '');
  await stackUp((line) => console.log(`# ${line}`), [llmComponent(serverOptions())]);
  const client = new LlamaCppClient({ rootUrl: root });
  const promptIds = await client.tokenize(await client.applyTemplate([{ role: 'user', content: PROMPT }]), false);
  const completions = [];
  for (const reply of REPLIES) {
    const completionIds = await client.tokenize(`${reply}<|im_end|>`, false);
    // The behaviour logprobs are the server's own at temperature 1, as the learner (at temperature 1) assumes.
    completions.push({ completionIds, logprobs: await servedLogprobs(promptIds, completionIds) });
  }
  turns = { promptIds, completions };
  context = await freshContext('llm-sign');
  sync = createWeightSync(context, { server: llamaCppWeightServer({ ...serverOptions(), workDir: join(stateDir, 'adapters') }), store: new LocalCheckpointStore(checkpoints), onServed: (version) => served.push(version) });
  await sync.start();
}, { timeout: 1_800_000 });

after(async () => {
  await sync?.stop();
  await llmComponent(serverOptions()).stop(() => {});
});

test('one update on rewarded and punished replies, weight-synced: llama.cpp raises the rewarded ones\' logprobs and lowers the punished ones\'', { timeout: 1_800_000 }, async () => {
  const base = turns.completions.map((c) => sum(c.logprobs));
  await sendPairs(context, REPLIES.map((_, i) => llmSamplePair(turns, i, { runId: 'llm-sign-it' })));
  // One update of four samples, two epochs (the clip bounds each token's step), then the learner exits by itself.
  const learner = spawn(
    process.execPath,
    [join(repoRoot(), 'bin', 'trialrun.js'), 'run', 'llm-learner', '--batch-size', '4', '--session-timeout-ms', '10000', '--gguf', gguf, '--', '--threads', '2', '--max-updates', '1', '--temperature', '1', '--learning-rate', '2e-3', '--epochs', '2'],
    { env: { ...process.env, TRIALRUN_TOPIC_PREFIX: context.names.prefix, TRIALRUN_CHECKPOINTS: checkpoints }, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  try {
    assert.equal(await childExit(learner), 0, 'the learner exits 0 after its one update');
  } finally {
    await stopChild(learner, { graceMs: 10_000 });
  }
  const [checkpoint] = await readAll(context, 'policyCheckpoints');
  assert.deepEqual([checkpoint?.version, checkpoint?.metrics.samples], [1, 4]);
  // Weight sync reports v1 served once its restart returns, a moment after the new server starts answering.
  await eventually('weight sync to serve v1', async () => served.length > 0 && (await servedModel().catch(() => '')) === 'smollm2-135m-instruct@v1', 600_000, 1000);
  assert.deepEqual(served, [1]);
  const updated: number[] = [];
  for (const c of turns.completions) updated.push(sum(await servedLogprobs(turns.promptIds, c.completionIds)));
  const moves = REPLIES.map((reply, i) => `${i % 2 ? '+' : '-'} ${JSON.stringify(reply)}: ${base[i]!.toFixed(3)} -> ${updated[i]!.toFixed(3)}`);
  console.log(`# served logprobs, advantage and reply:\n# ${moves.join('\n# ')}`);
  for (const [i, reply] of REPLIES.entries()) {
    if (i % 2) assert.ok(updated[i]! > base[i]!, `rewarded ${JSON.stringify(reply)} should rise: ${moves[i]}`);
    else assert.ok(updated[i]! < base[i]!, `punished ${JSON.stringify(reply)} should fall: ${moves[i]}`);
  }
});
