import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxPool } from '../../connectors/sandbox/index.js';
import { SINGLE_TURN } from '../../envs/index.js';
import { seededRandom, type Action, type Policy } from '../../policies/index.js';
import type { Task } from '../../schemas/index.js';
import { runEpisode } from './episode.js';

const noSandbox: SandboxPool = {
  acquire: () => Promise.reject(new Error('a single-turn episode takes no sandbox')),
  close: async () => undefined,
};
const task = { taskId: 't', description: 'Reply with 42.', files: { 'answer.txt': '' }, visibleTests: {} } as unknown as Task;

/** A policy that gives `replies` in turn (the last one forever after) and counts how often it was asked. */
function replying(...replies: Action[]): Policy<unknown> & { asked: number } {
  const policy = {
    policyId: 'scripted',
    version: 0,
    asked: 0,
    act: async (): Promise<Action> => replies[Math.min(policy.asked++, replies.length - 1)]!,
  };
  return policy;
}

const play = (maxTurns: number, policy: Policy<unknown>) => {
  const env = SINGLE_TURN.create({ pool: noSandbox, runId: 'unit', imageFor: (recipe) => recipe, maxTurns });
  return runEpisode(SINGLE_TURN, env, () => env.init(task), policy, seededRandom('episode'), new AbortController().signal);
};

const invalid: Action = { action: { name: 'invalid_reply', arguments: {} }, decision: null, invalid: 'the reply is not one JSON object' };
const wrongTool: Action = { action: { name: 'submit', arguments: {} }, decision: null };
const answer: Action = { action: { name: 'answer', arguments: { text: '42' } }, decision: null };

test('a policy that only ever gives invalid replies is cut off at the turn cap: every reply counts, the episode ends max-turns', async () => {
  const policy = replying(invalid);
  const episode = await play(3, policy);
  assert.deepEqual([episode.steps.length, episode.outcome, policy.asked], [3, 'max-turns', 3]);
  assert.ok(episode.steps.every((step) => !step.toolResult.ok && step.sandboxMs === 0));
  assert.deepEqual(episode.finalFiles, { 'answer.txt': '' }, 'truncated, the final files are what the environment holds');
});

test('invalid replies and failed tool calls count alike; the policy is not asked past the cap', async () => {
  const policy = replying(invalid, wrongTool, answer);
  const episode = await play(2, policy);
  assert.deepEqual([episode.steps.map((step) => step.toolCall.name), episode.outcome, policy.asked], [['invalid_reply', 'submit'], 'max-turns', 2]);
});

test('an episode the agent ends within the cap is submitted, with its final files', async () => {
  const episode = await play(3, replying(invalid, answer));
  assert.deepEqual([episode.steps.length, episode.outcome, episode.finalFiles], [2, 'submitted', { 'answer.txt': '42' }]);
});
