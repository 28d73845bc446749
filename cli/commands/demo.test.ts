import assert from 'node:assert/strict';
import test from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { AGENT_COMMAND_ENV } from '../../envs/index.js';
import { DEMO_EXPERIMENT, DEMO_LLM_EXPERIMENT, demoAgent, resolveDemoSettings } from './demo.js';

test('the default demo is an experiment: onnx-repair, process sandboxes, the HumanEval-derived tasks, its own defaults', () => {
  const settings = resolveDemoSettings({ env: 'program-repair/v1', workers: '2', verifiers: '2' });
  assert.equal(settings.policyId, 'onnx-repair');
  assert.equal(settings.sandbox, 'process');
  assert.equal(settings.taskFile, undefined, 'derived into the data folder on first use');
  assert.deepEqual([settings.groupSize, settings.batchSize, settings.maxTurns], [DEMO_EXPERIMENT.groupSize, DEMO_EXPERIMENT.batchSize, DEMO_EXPERIMENT.maxTurns]);
  assert.deepEqual(settings.experiment, { minutes: 10, evalSamples: 2, evalConcurrency: 2, learningRate: 0.1, evalPercent: 25 });
  const tuned = resolveDemoSettings({ env: 'program-repair/v1', workers: '2', verifiers: '2', minutes: '2.5', 'eval-samples': '4', 'batch-size': '32', sandbox: 'docker' });
  assert.deepEqual([tuned.experiment?.minutes, tuned.experiment?.evalSamples, tuned.batchSize, tuned.sandbox], [2.5, 4, 32, 'docker']);
});

test('a policy that is not trained runs the plain loop, and refuses the experiment flags', () => {
  const loop = resolveDemoSettings({ env: 'workspace/v1', workers: '2', verifiers: '2' });
  assert.equal(loop.experiment, undefined);
  assert.deepEqual([loop.policyId, loop.sandbox, loop.batchSize, loop.maxTurns], ['llm', 'docker', 16, 14]);
  assert.throws(() => resolveDemoSettings({ env: 'workspace/v1', workers: '2', verifiers: '2', minutes: '5' }), (error: unknown) => error instanceof ConfigError && /--minutes go with a trainable policy/.test(error.message));
  assert.throws(() => resolveDemoSettings({ env: 'program-repair/v1', workers: '2', verifiers: '2', minutes: '0' }), (error: unknown) => error instanceof ConfigError && /--minutes must be a number > 0/.test(error.message));
});

test('demo --policy llm is the single-turn experiment: python-expressions, one reply of at most 48 tokens sampled with top-p 1, the Python learner\'s step', () => {
  const settings = resolveDemoSettings({ policy: 'llm', workers: '1', verifiers: '1' });
  assert.equal(settings.envId, 'single-turn/v1');
  assert.match(settings.workspaceJob ?? '', /tasks\/single-turn\/python-expressions\.yaml$/);
  assert.deepEqual([settings.groupSize, settings.batchSize, settings.maxTurns, settings.sandbox], [8, 32, 1, 'process']);
  assert.deepEqual([settings.llm?.maxTokensPerTurn, settings.llm?.topP, settings.llm?.temperature], [48, 1, 0.7]);
  assert.deepEqual(settings.experiment, { minutes: DEMO_LLM_EXPERIMENT.minutes, evalSamples: 2, evalConcurrency: 2, learningRate: DEMO_LLM_EXPERIMENT.learningRate, evalPercent: 25, evalTasks: 64, decoding: 'sample' });
  const tuned = resolveDemoSettings({ policy: 'llm', workers: '1', verifiers: '1', 'top-p': '0.9', minutes: '3', sandbox: 'docker' });
  assert.deepEqual([tuned.llm?.topP, tuned.experiment?.minutes, tuned.sandbox], [0.9, 3, 'docker']);
  assert.equal(resolveDemoSettings({ workers: '1', verifiers: '1' }).envId, 'program-repair/v1');
});

test('--agent and --agent-command choose agent-command/v1 over the workspace job with the llm policy; one of them, and a known agent', () => {
  const named = resolveDemoSettings({ agent: 'mini-swe-agent', workers: '1', verifiers: '1' });
  assert.deepEqual([named.envId, named.policyId, named.experiment, named.sandbox], [AGENT_COMMAND_ENV, 'llm', undefined, 'docker']);
  assert.match(named.workspaceJob!, /tasks\/workspace-mini\/job\.yaml$/);
  assert.deepEqual(demoAgent({ agent: 'mini-swe-agent' }), { command: 'run-mini-swe-agent', image: 'mini-swe-agent' });
  assert.deepEqual(demoAgent({ 'agent-command': 'python3 my_agent.py' }), { command: 'python3 my_agent.py', image: null });
  assert.equal(demoAgent({}), null);
  assert.throws(() => demoAgent({ agent: 'mini-swe-agent', 'agent-command': 'x' }), (error: unknown) => error instanceof ConfigError && /give one/.test(error.message));
  assert.throws(() => demoAgent({ agent: 'openhands' }), (error: unknown) => error instanceof ConfigError && /mini-swe-agent/.test(error.message));
  assert.throws(() => demoAgent({ 'agent-command': '  ' }), (error: unknown) => error instanceof ConfigError && /--agent-command needs a value/.test(error.message));
});
