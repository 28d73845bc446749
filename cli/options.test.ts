import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { choiceOption, existingDir, existingFile, intOption, listOption, numberOption, outputFile, policyChoice, positionOption, requiredInt, stringOption, taskRowsFile } from './options.js';

test('whole numbers: plain digits at or above the minimum, else a ConfigError naming the option and the value', () => {
  assert.equal(intOption({ n: '3' }, 'n'), 3);
  assert.equal(intOption({ n: '0' }, 'n', 0), 0);
  assert.equal(intOption({}, 'n'), undefined);
  for (const bad of ['abc', '', '1.5', '1e3', '0x10', '-1', '0', '99999999999999999999', ' ']) {
    assert.throws(() => intOption({ n: bad }, 'n'), (error: unknown) => error instanceof ConfigError && error.message === `--n must be a whole number >= 1, got "${bad}"`);
  }
  assert.throws(() => requiredInt({}, 'workers'), /--workers is required/);
});

test('numbers: finite and inside the bounds', () => {
  assert.equal(numberOption({ lr: '0.1' }, 'lr', { above: 0 }), 0.1);
  assert.equal(numberOption({ p: '99.5' }, 'p', { above: 0, below: 100 }), 99.5);
  for (const bad of ['0', '-1', 'NaN', 'Infinity', '', 'x']) assert.throws(() => numberOption({ lr: bad }, 'lr', { above: 0 }), /--lr must be a number > 0, got/);
  assert.throws(() => numberOption({ p: '100' }, 'p', { above: 0, below: 100 }), /--p must be a number > 0 and < 100, got "100"/);
  for (const share of ['0', '0.5', '1']) assert.equal(numberOption({ s: share }, 's', { above: 0, below: 1, inclusive: true }), Number(share));
  assert.throws(() => numberOption({ s: '1.5' }, 's', { above: 0, below: 1, inclusive: true }), /--s must be a number >= 0 and <= 1, got "1\.5"/);
});

test('choices, strings and lists refuse what they cannot use', () => {
  assert.equal(choiceOption({ policy: 'b' }, 'policy', ['a', 'b']), 'b');
  assert.throws(() => choiceOption({ policy: 'c' }, 'policy', ['a', 'b']), /--policy must be one of a, b, got "c"/);
  assert.equal(stringOption({}, 'out'), undefined);
  assert.throws(() => stringOption({ out: ' ' }, 'out'), /--out needs a value/);
  assert.deepEqual(listOption({ run: ['a', 'b'] }, 'run'), ['a', 'b']);
  assert.throws(() => listOption({ run: ['a', ''] }, 'run'), /--run needs a value/);
});

test('files and folders must exist and be of their kind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-options-'));
  const file = join(dir, 'tasks.jsonl');
  writeFileSync(file, '');
  assert.equal(existingFile(file, '--tasks'), file);
  assert.throws(() => existingFile(join(dir, 'nope.jsonl'), '--tasks'), (error: unknown) => error instanceof ConfigError && error.message === `--tasks: no such file ${join(dir, 'nope.jsonl')}`);
  assert.throws(() => existingFile(dir, '--tasks'), /is not a file/);
  assert.equal(existingDir(dir, '--data-dir'), dir);
  assert.throws(() => existingDir(file, '--data-dir'), /is not a folder/);
  assert.throws(() => existingDir(join(dir, 'nope'), '--data-dir'), /--data-dir: no such folder/);
  assert.equal(outputFile(join(dir, 'out.csv'), '--out'), join(dir, 'out.csv'));
  assert.throws(() => outputFile(join(dir, 'nope', 'out.csv'), '--out'), (error: unknown) => error instanceof ConfigError && error.message === `--out: no folder ${join(dir, 'nope')} to write ${join(dir, 'nope', 'out.csv')} in`);
  assert.throws(() => outputFile(dir, '--out'), /is a folder/);
  writeFileSync(join(dir, 'job.yaml'), 'name: x\n');
  assert.equal(taskRowsFile(file, '--tasks'), file);
  assert.throws(() => taskRowsFile(join(dir, 'job.yaml'), '--tasks'), /--tasks takes a JSON Lines file of task rows; .*job\.yaml is a job file: run it with `trialrun tasks publish/);
});

test('positions name their option in errors', () => {
  assert.deepEqual(positionOption({ from: '12' }, 'from'), { offset: 12n });
  assert.equal(positionOption({}, 'to', 'latest'), 'latest');
  assert.throws(() => positionOption({}, 'from'), /--from is required/);
  assert.throws(() => positionOption({ from: 'yesterday' }, 'from'), /^ConfigError: --from: "yesterday" is not a position/);
  assert.throws(() => positionOption({ from: '-5' }, 'from'), /--from: "-5" is negative/);
});

test('--policy llm resolves its flags into LlmPolicyOptions before anything starts; llm flags with another policy are refused', () => {
  const policies = ['linear-repair', 'onnx-repair', 'llm'];
  const choice = policyChoice({ policy: 'llm', temperature: '0', 'top-p': '0.5', 'max-tokens-per-turn': '64', seed: '7', 'concurrent-episodes': '1', 'episode-tokens': '2048', 'episode-seconds': '30', unconstrained: true, 'llm-server': 'llama.cpp' }, policies, {});
  assert.equal(choice.policyId, 'llm');
  assert.deepEqual(
    [choice.llm!.temperature, choice.llm!.topP, choice.llm!.maxTokensPerTurn, choice.llm!.seed, choice.llm!.concurrentEpisodes, choice.llm!.maxEpisodeTokens, choice.llm!.maxEpisodeMs, choice.llm!.constrained, choice.llm!.server],
    [0, 0.5, 64, 7, 1, 2048, 30_000, false, 'llama.cpp'],
  );
  assert.equal(policyChoice({ policy: 'llm' }, policies, { LLM_BASE_URL: 'http://gpu:8000/v1' }).llm!.baseUrl, 'http://gpu:8000/v1');
  assert.deepEqual(policyChoice({ policy: 'linear-repair', unconstrained: false }, policies, {}), { policyId: 'linear-repair' });
  assert.throws(() => policyChoice({ policy: 'onnx-repair', temperature: '1' }, policies, {}), /--temperature goes with --policy llm, not --policy onnx-repair/);
  assert.throws(() => policyChoice({ policy: 'llm', temperature: '5' }, policies, {}), /--temperature must be within 0\.\.2, got 5/);
  assert.throws(() => policyChoice({ policy: 'llm', 'top-p': 'x' }, policies, {}), /--top-p must be a number/);
  assert.throws(() => policyChoice({ policy: 'llm', 'llm-server': 'tgi' }, policies, {}), /--llm-server must be one of auto, llama\.cpp, vllm, openai, got "tgi"/);
  assert.throws(() => policyChoice({ policy: 'llm', 'episode-tokens': '100', 'max-tokens-per-turn': '64' }, policies, {}), /--episode-tokens \(100\) must be at least twice --max-tokens-per-turn \(64\)/);
});
