import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ChatClient } from '../../connectors/llm/index.js';
import { DockerSandboxPool } from '../../connectors/sandbox/index.js';
import { makeEnv } from '../../envs/index.js';
import { LlmRepairPolicy, seededRandom } from '../../policies/index.js';
import { runEpisode } from '../../pipelines/rollout-worker/index.js';
import { prepareTasks } from '../../pipelines/task-job/index.js';
import { imageFor } from '../../stack/index.js';
import { repoRoot } from '../../cli/paths.js';
import { ensureStack, tempDir } from './harness.js';

/**
 * A local server speaking the OpenAI chat-completions API, scripted like a patient agent: run the tests,
 * list the edits, then try them in order (apply, run tests, revert) until the tests pass, and submit.
 * It fails its first request with 503 so the client's retry shows in the trajectory.
 */
function scriptedAgentServer() {
  const seen: Array<{ messages: Array<Record<string, unknown>>; tools: unknown[] }> = [];
  let requests = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      requests++;
      if (requests === 1) return send(res, 503, { error: { message: 'warming up' } });
      const body = JSON.parse(raw) as { messages: Array<Record<string, unknown>>; tools: unknown[] };
      seen.push(body);
      send(res, 200, completion(nextCall(body.messages)));
    });
  });
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const completion = (call: { name: string; args: Record<string, unknown> }) => ({
    model: 'scripted-agent',
    choices: [{ message: { content: `calling ${call.name}`, tool_calls: [{ id: `call_${requests}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } }] }, finish_reason: 'tool_calls', logprobs: { content: [{ token: call.name, logprob: -0.1 }] } }],
    usage: { prompt_tokens: 100 + requests, completion_tokens: 7 },
  });
  let editIds: number[] = [];
  let next = 0;
  let lastCall = '';
  const nextCall = (messages: Array<Record<string, unknown>>): { name: string; args: Record<string, unknown> } => {
    const last = messages.at(-1)!;
    const output = last.role === 'tool' ? String(last.content) : '';
    const call = (() => {
      if (lastCall === '') return { name: 'run_tests', args: {} };
      if (lastCall === 'run_tests' && editIds.length === 0) return { name: 'list_edits', args: {} };
      if (lastCall === 'list_edits') {
        editIds = [...output.matchAll(/^#(\d+) /gm)].map((m) => Number(m[1]));
        return { name: 'apply_edit', args: { id: editIds[next++] } };
      }
      if (lastCall === 'apply_edit') return { name: 'run_tests', args: {} };
      if (lastCall === 'run_tests' && /passed/.test(output) && !/failed|error/.test(output)) return { name: 'submit', args: {} };
      if (lastCall === 'run_tests') return { name: 'revert', args: {} };
      return { name: 'apply_edit', args: { id: editIds[next++] } };
    })();
    lastCall = call.name;
    return call;
  };
  return { server, seen };
}

const pool = new DockerSandboxPool();
const { server, seen } = scriptedAgentServer();
let baseUrl = '';
before(async () => {
  await ensureStack();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}, { timeout: 900_000 });
after(async () => {
  server.close();
  await pool.close();
});

test('an LLM agent over the OpenAI API repairs a task, with tool calls, tokens, retries and logprobs recorded', { timeout: 180_000 }, async () => {
  const tasks = (await prepareTasks({ file: join(repoRoot(), 'tasks', 'repair-bundle.jsonl'), rejectsDir: tempDir('llm') })).tasks;
  // A task with few candidate edits keeps the brute-force script short.
  const task = tasks.find((t) => t.taskId.includes('config-parser')) ?? tasks[0]!;
  const policy = new LlmRepairPolicy({ client: new ChatClient({ baseUrl, model: 'scripted-agent', retry: { retries: 2, initialDelayMs: 1, maxDelayMs: 5 } }) });
  const env = makeEnv(task.envId, { pool, runId: 'llm', imageFor, maxTurns: 30 });
  const episode = await runEpisode(env, () => env.init(task), policy, seededRandom('llm'), new AbortController().signal);

  assert.equal(episode.outcome, 'submitted');
  assert.equal(episode.finalFiles[Object.keys(task.files)[0]!], task.referenceSolution![Object.keys(task.files)[0]!], 'the agent found the reference fix');
  const tools = (seen[0]!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
  assert.deepEqual(tools, ['read_file', 'write_file', 'run_tests', 'list_edits', 'apply_edit', 'revert', 'submit']);
  // Every tool call was answered with its result, by id, before the next request.
  const final = seen.at(-1)!.messages;
  const answered = final.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
  const asked = final.flatMap((m) => ((m.tool_calls as Array<{ id: string }> | undefined) ?? []).map((c) => c.id));
  assert.deepEqual(answered, asked.slice(0, answered.length));
  for (const step of episode.steps) {
    assert.ok(step.llm, `step ${step.index} records the model call`);
    assert.equal(step.llm.model, 'scripted-agent');
    assert.ok((step.llm.promptTokens ?? 0) > 100);
    assert.equal(step.llm.completionTokens, 7);
    assert.deepEqual(step.llm.logprobs, [-0.1]);
  }
  assert.equal(episode.steps[0]!.llm!.attempts, 2, 'the first call was retried after a 503');
});
