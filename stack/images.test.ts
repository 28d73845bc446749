import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { resolveImageTag, taskImagePlan } from './images.js';

const environment = (dockerfile: string, files: Record<string, string> = {}): string => {
  const dir = mkdtempSync(join(tmpdir(), 'trialrun-task-image-'));
  writeFileSync(join(dir, 'Dockerfile'), dockerfile);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
};
const OPS = 'ARG BASE_IMAGE=trialrun/ops\nFROM ${BASE_IMAGE}\nCOPY data.txt /opt/data.txt\n';

test('a task image FROM a trialrun recipe is tagged by its folder and its parent tag, the same until either changes', () => {
  const dir = environment(OPS, { 'data.txt': 'one\n' });
  const plan = taskImagePlan(dir, 'fixture');
  assert.match(plan.tag, /^trialrun\/task-fixture:[0-9a-f]{12}$/);
  assert.deepEqual([plan.parent, plan.parentArg, plan.parentTag], ['ops', 'BASE_IMAGE', resolveImageTag('ops')]);
  assert.equal(taskImagePlan(dir, 'fixture').tag, plan.tag);
  writeFileSync(join(dir, 'data.txt'), 'two\n');
  assert.notEqual(taskImagePlan(dir, 'fixture').tag, plan.tag);
  const onPython = taskImagePlan(environment(OPS.replace('trialrun/ops', 'trialrun/python-repair'), { 'data.txt': 'two\n' }), 'fixture');
  assert.notEqual(onPython.tag, taskImagePlan(dir, 'fixture').tag);
});

test('a task image FROM anything but a trialrun recipe is refused, naming the images it may use', () => {
  const allowed = /one of the trialrun images \(trialrun\/base, trialrun\/mini-swe-agent, trialrun\/ops, trialrun\/python-repair\), since nothing can be pulled here/;
  const refused: Array<[string, RegExp]> = [
    ['FROM ubuntu:22.04\nRUN true\n', /`FROM ubuntu:22\.04` does not name a trialrun image through an ARG/],
    ['ARG BASE=python:3.12\nFROM ${BASE}\n', /`FROM \$\{BASE\}` does not name a trialrun image through an ARG/],
    ['ARG BASE=trialrun/nope\nFROM ${BASE}\n', /trialrun\/nope is not a sandbox image recipe/],
    ['RUN true\n', /it has no FROM line/],
  ];
  for (const [dockerfile, why] of refused) {
    assert.throws(() => taskImagePlan(environment(dockerfile), 'x'), (error: unknown) => error instanceof ConfigError && why.test(error.message) && allowed.test(error.message), dockerfile);
  }
  assert.throws(() => taskImagePlan(environment('FROM trialrun/ops\n'), 'x'), /name trialrun parents through an ARG/);
  assert.throws(() => taskImagePlan(environment(OPS), 'Bad Name'), /task image name "Bad Name" must be lower-case/);
  assert.throws(() => taskImagePlan(mkdtempSync(join(tmpdir(), 'trialrun-task-image-')), 'x'), /has no Dockerfile/);
});
