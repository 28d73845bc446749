import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import type { Task } from '../../schemas/index.js';
import { checkTaskPayload } from '../types.js';
import { SINGLE_TURN } from './spec.js';

const noSandbox: SandboxPool = {
  acquire: () => Promise.reject(new Error('a single-turn episode takes no sandbox')),
  close: async () => undefined,
};
const env = (maxTurns: number) => SINGLE_TURN.create({ pool: noSandbox, runId: 'unit', imageFor: (recipe) => recipe, maxTurns });
const task = { taskId: 't', description: 'Reply with 42.', files: { 'answer.txt': '' }, visibleTests: {} } as unknown as Task;

test('single-turn/v1: the answer is the final files at the task\'s one path, and ends the episode as terminated', async () => {
  const episode = env(4);
  const observation = await episode.init(task);
  assert.deepEqual([observation.replyPath, observation.turn, episode.imageDigest], ['answer.txt', 0, null]);
  const step = await episode.step({ name: 'answer', arguments: { text: '```\n42\n```' } });
  assert.deepEqual([step.done, step.truncated, step.finalFiles, step.result.ok], [true, false, { 'answer.txt': '```\n42\n```' }, true]);
  await episode.close();
  await episode.close();
});

test('single-turn/v1: a call that is not an answer is a failed result and the episode goes on; truncated, the reply is the empty file', async () => {
  const episode = env(2);
  await episode.init(task);
  const wrong = await episode.step({ name: 'submit', arguments: {} });
  assert.deepEqual([wrong.result.ok, wrong.done], [false, false]);
  assert.match(wrong.result.output, /unknown tool "submit"; tools: answer/);
  const last = await episode.step({ name: 'answer', arguments: { text: 7 } as never });
  assert.deepEqual([last.result.ok, last.done, last.truncated, last.finalFiles], [false, false, false, null], 'the environment does not count turns: runEpisode applies the cap');
  assert.deepEqual(await episode.truncate(), { finalFiles: { 'answer.txt': '' }, sandboxMs: 0 });
});

test('single-turn/v1 tasks hold exactly one empty file, the reply\'s path, and no visible tests', () => {
  checkTaskPayload(SINGLE_TURN, task);
  assert.throws(() => checkTaskPayload(SINGLE_TURN, { ...task, files: { 'answer.txt': 'prefilled' } }), /exactly one file, the path its reply is written to/);
  assert.throws(() => checkTaskPayload(SINGLE_TURN, { ...task, files: { 'a.txt': '', 'b.txt': '' } }), /exactly one file/);
  assert.throws(() => checkTaskPayload(SINGLE_TURN, { ...task, visibleTests: { 'test_a.py': '' } }), /no visible tests/);
  assert.deepEqual(SINGLE_TURN.freeReply, { tool: 'answer', argument: 'text' });
});
