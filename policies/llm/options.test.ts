import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, STACK_LLM_MODEL, STACK_LLM_URL } from '../../schemas/index.js';
import { resolveLlmPolicyOptions } from './options.js';

test('defaults: the stack\'s own server and model, constrained decoding, budgets that fit its context per slot', () => {
  const options = resolveLlmPolicyOptions({}, {});
  assert.equal(options.baseUrl, STACK_LLM_URL);
  assert.equal(options.model, STACK_LLM_MODEL);
  assert.equal(options.server, 'auto');
  assert.equal(options.apiKey, null);
  assert.deepEqual(
    [options.temperature, options.topP, options.maxTokensPerTurn, options.seed, options.concurrentEpisodes, options.maxEpisodeTokens, options.maxEpisodeMs, options.constrained],
    [0.7, 0.95, 256, null, 2, 4096, 600_000, true],
  );
  assert.equal(options.scaffold, 'agent');
});

test('LLM_BASE_URL, LLM_MODEL and the API key variable point at another server', () => {
  const options = resolveLlmPolicyOptions({ apiKeyEnv: 'MY_KEY' }, { LLM_BASE_URL: 'https://api.example.test/v1/', LLM_MODEL: 'big', MY_KEY: 'sk-1' });
  assert.deepEqual([options.baseUrl, options.model, options.apiKey], ['https://api.example.test/v1', 'big', 'sk-1']);
  assert.equal(resolveLlmPolicyOptions({}, { LLM_API_KEY: 'sk-2' }).apiKey, 'sk-2');
});

test('bad values and combinations are refused, naming the field', () => {
  const refused: Array<[Parameters<typeof resolveLlmPolicyOptions>[0], RegExp]> = [
    [{ baseUrl: 'localhost:8090' }, /baseUrl "localhost:8090" is not an http\(s\) URL/],
    [{ temperature: 3 }, /temperature must be within 0\.\.2, got 3/],
    [{ topP: 0 }, /topP must be > 0 and <= 1, got 0/],
    [{ maxTokensPerTurn: 1.5 }, /maxTokensPerTurn must be a whole number >= 1/],
    [{ maxEpisodeTokens: 300, maxTokensPerTurn: 256 }, /maxEpisodeTokens \(300\) must be at least twice LlmPolicyOptions\.maxTokensPerTurn \(256\)/],
    [{ seed: -1 }, /seed must be a whole number >= 0/],
    [{ concurrentEpisodes: 0 }, /concurrentEpisodes must be a whole number >= 1/],
    [{ server: 'tgi' as never }, /server must be one of auto, llama\.cpp, vllm, openai/],
    [{ apiKeyEnv: 'NOT_SET_HERE' }, /apiKeyEnv names NOT_SET_HERE, which is not set/],
    [{ apiKeyEnv: 'bad name' }, /apiKeyEnv must name an environment variable/],
    [{ scaffold: 'swe-agent' as never }, /scaffold must be one of agent, repair-script, got "swe-agent"/],
  ];
  for (const [options, message] of refused) assert.throws(() => resolveLlmPolicyOptions(options, {}), (error: unknown) => error instanceof ConfigError && message.test(error.message));
});
