import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { seededRandom } from '../../../../policies/index.js';
import { checkoutFile } from '../../../../schemas/index.js';
import { DOCUMENT_TEMPLATES, documentTask, EXPRESSION_TEMPLATES, expressionTask, GenerateSource, generatedTasks, heldOutTemplates } from './index.js';

const source = (input: Record<string, unknown>): GenerateSource => GenerateSource.parse(input);

test('a generate source makes the same tasks from the same seed, spread evenly over the templates', async () => {
  const first = generatedTasks(source({ family: 'python-expressions', count: 64, seed: 's1' }), 'job');
  const again = generatedTasks(source({ family: 'python-expressions', count: 64, seed: 's1' }), 'job');
  const other = generatedTasks(source({ family: 'python-expressions', count: 64, seed: 's2' }), 'job');
  assert.deepEqual(first.map((t) => [t.entry.id, t.entry.description, t.entry.verification]), again.map((t) => [t.entry.id, t.entry.description, t.entry.verification]));
  assert.notDeepEqual(first.map((t) => t.entry.verification), other.map((t) => t.entry.verification));
  const perTemplate = new Map<string, number>();
  for (const task of first) perTemplate.set(task.entry.tags[1]!, (perTemplate.get(task.entry.tags[1]!) ?? 0) + 1);
  assert.deepEqual([...new Set(perTemplate.values())], [64 / EXPRESSION_TEMPLATES.length]);
  assert.equal(new Set(first.map((t) => t.entry.id)).size, 64);
});

test('held-out tasks are whole templates: every task of a held-out template is eval, every other task train', () => {
  for (const family of ['python-expressions', 'json-documents'] as const) {
    const spec = source({ family, count: 200, seed: 'split', heldOutTemplates: 0.25 });
    const held = heldOutTemplates(spec);
    const templates = family === 'python-expressions' ? EXPRESSION_TEMPLATES.length : DOCUMENT_TEMPLATES.length;
    assert.equal(held.size, Math.round(templates / 4));
    for (const task of generatedTasks(spec, 'job')) assert.equal(task.entry.split, held.has(task.entry.tags[1]!) ? 'eval' : 'train', task.entry.id);
  }
  const named = source({ family: 'json-documents', count: 24, evalTemplates: ['book', 'car'] });
  assert.deepEqual([...heldOutTemplates(named)].sort(), ['book', 'car']);
  assert.equal(heldOutTemplates(source({ family: 'json-documents', count: 24, heldOutTemplates: 0 })).size, 0);
  assert.throws(() => GenerateSource.parse({ family: 'json-documents', count: 3, evalTemplates: ['no-such'] }), /is not a template of json-documents/);
  assert.throws(() => GenerateSource.parse({ family: 'poems', count: 3 }), /family/);
});

test('prompts stay short (a small model reads them cheaply): under 600 characters, about 150 tokens', () => {
  for (const family of ['python-expressions', 'json-documents'] as const) {
    for (const task of generatedTasks(source({ family, count: 300 }), 'job')) assert.ok(task.entry.description.length < 600, `${task.entry.id}: ${task.entry.description.length} characters`);
  }
});

test('expected values computed here are the ones the references give in Python (grade_expression.py on every template)', () => {
  const graders = checkoutFile('pipelines/jobs/task-job/generate/python');
  for (const [i, template] of EXPRESSION_TEMPLATES.entries()) {
    const task = expressionTask(template, seededRandom(`python-check/${i}`));
    const dir = mkdtempSync(join(tmpdir(), 'expr-'));
    writeFileSync(join(dir, 'answer.txt'), task.reference);
    writeFileSync(join(dir, 'cases.json'), JSON.stringify({ variable: task.variable, values: task.cases }));
    mkdirSync(join(dir, 'results'));
    execFileSync('python3', [join(graders, 'grade_expression.py')], { cwd: dir, env: { ...process.env, PYTHONPATH: graders } });
    assert.equal(readFileSync(join(dir, 'results', 'valid.txt'), 'utf8'), 'valid', template.name);
    task.expected.forEach((expected, c) => assert.deepEqual(JSON.parse(readFileSync(join(dir, 'results', `case-${c + 1}.json`), 'utf8')), expected, `${template.name} case ${c + 1}: ${task.reference} on ${JSON.stringify(task.cases[c])}`));
  }
});

test('a document task asks for 3 or 4 keys and its reference is exactly them', () => {
  for (const [i, template] of DOCUMENT_TEMPLATES.entries()) {
    const task = documentTask(template, seededRandom(`doc/${i}`));
    const keys = Object.keys(task.values);
    assert.ok(keys.length >= 3 && keys.length <= 4, template.name);
    assert.deepEqual(JSON.parse(task.reference), task.values);
    for (const key of keys) assert.match(task.prompt, new RegExp(`"${key}" set to `));
  }
});

test('a generated task: one empty reply file, graders and cases hidden, partial credit over its checks', async () => {
  const [expression] = generatedTasks(source({ family: 'python-expressions', count: 1 }), 'job');
  const trees = await expression!.readTrees();
  assert.deepEqual(trees.files, { 'answer.txt': '' });
  assert.deepEqual(Object.keys(trees.hidden).sort(), ['cases.json', 'grade_expression.py', 'reply_code.py']);
  const verification = expression!.entry.verification!;
  assert.deepEqual(verification.reward, { shape: 'fraction' });
  assert.equal(verification.check.kind === 'output' && verification.check.checks.length, 5);
  const [document] = generatedTasks(source({ family: 'json-documents', count: 1 }), 'job');
  assert.deepEqual(Object.keys((await document!.readTrees()).hidden).sort(), ['extract_document.py', 'reply_code.py']);
});
