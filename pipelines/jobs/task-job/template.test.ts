import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, isRetriable, TrialrunError } from '../../../schemas/index.js';
import { MissingColumn, Template } from './template.js';

describe('Template', () => {
  it('renders columns, filters and literal braces', () => {
    const template = Template.compile('{task_id|slug}-{{x}}-{name|trim|lower}', 'mapping.id');
    assert.deepEqual(template.columns, ['task_id', 'name']);
    assert.equal(template.render({ task_id: 'HumanEval/12', name: '  MiXed ' }), 'humaneval-12-{x}-mixed');
  });

  it('renders numbers, and lists and objects as JSON', () => {
    assert.equal(Template.compile('{a}/{b}', 'f').render({ a: 3, b: ['x', 1] }), '3/["x",1]');
  });

  it('rejects a row that lacks a column, naming the column', () => {
    const template = Template.compile('{prompt}{canonical_solution}', 'mapping.source');
    assert.throws(() => template.render({ prompt: 'def f():' }), (error: unknown) => error instanceof MissingColumn && error.column === 'canonical_solution' && error instanceof TrialrunError && !(error instanceof ConfigError) && !isRetriable(error));
    assert.throws(() => template.render({ prompt: '', canonical_solution: 'x' }), MissingColumn);
  });

  it('renders an optional hole as nothing where the row lacks its column, and does not require the column', () => {
    const template = Template.compile('{family?}', 'mapping.family');
    assert.deepEqual(template.columns, []);
    assert.equal(template.optional, true);
    assert.equal(Template.compile('{family?}-x', 'mapping.family').optional, false);
    assert.equal(template.render({}), '');
    assert.equal(template.render({ family: 'humaneval-0' }), 'humaneval-0');
    assert.throws(() => Template.compile('{ ?}', 'mapping.family'), /empty column name/);
  });

  it('reports malformed templates with the field they belong to', () => {
    assert.throws(() => Template.compile('{open', 'mapping.title'), (error: unknown) => error instanceof ConfigError && /mapping\.title: unclosed/.test(error.message));
    assert.throws(() => Template.compile('a}b', 'mapping.title'), /unmatched "}"/);
    assert.throws(() => Template.compile('{x|shout}', 'mapping.title'), /unknown filter "shout"/);
    assert.throws(() => Template.compile('{}', 'mapping.title'), /empty column name/);
  });
});
