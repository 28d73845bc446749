import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../../schemas/index.js';
import { RowMapper } from './rows.js';
import { IMPORTERS, Mapping, resolveJob } from './spec.js';

const minimal = { name: 'demo', sources: [{ path: 'rows.jsonl' }], importer: 'repair-rows' };

function problems(raw: unknown): string {
  try {
    resolveJob(raw, '/jobs');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  assert.fail('the job was accepted');
}

describe('resolveJob', () => {
  it('fills defaults and resolves source paths against the job file', () => {
    const job = resolveJob(minimal, '/jobs');
    assert.equal(job.sources[0]!.path, '/jobs/rows.jsonl');
    assert.equal(job.mapping.kind, 'repair');
    assert.equal(job.spec.dedup.nearDuplicateThreshold, 0.8);
    assert.equal(job.spec.limits.maxRowBytes, 1 << 20);
    assert.equal(job.spec.limits.maxRowDepth, 32);
    assert.deepEqual(job.spec.difficulty.buckets.map((b) => b.name), ['easy', 'medium', 'hard']);
    assert.equal(job.spec.publish.transactionTimeoutMs, 300_000);
  });

  it('names the field of every problem', () => {
    assert.match(problems({ ...minimal, name: 'Bad Name' }), /name: must be lower-case/);
    assert.match(problems({ ...minimal, sources: [] }), /sources: /);
    assert.match(problems({ ...minimal, limits: { maxRowDepth: 100_000 } }), /limits\.maxRowDepth: .*256/);
    assert.match(problems({ ...minimal, dedup: { nearDuplicateThreshold: 2 } }), /dedup\.nearDuplicateThreshold/);
    assert.match(problems({ ...minimal, surprise: 1 }), /Unrecognized key.*surprise/);
    assert.match(problems({ name: 'x', sources: [{ path: 'a' }] }), /importer: give exactly one of importer and mapping/);
    assert.match(problems({ ...minimal, derive: {} }), /derive: repair rows are tasks already/);
    assert.match(problems({ ...minimal, importer: 'humaneval' }), /derive: solution rows need a derive section/);
    assert.match(problems({ ...minimal, difficulty: { mix: { easy: 0.5, impossible: 0.5 } } }), /difficulty\.mix\.impossible: is not a bucket/);
    assert.match(problems({ ...minimal, difficulty: { mix: { easy: 0.5, hard: 0.2 } } }), /difficulty\.mix: shares must add up to 1/);
    assert.match(problems({ ...minimal, difficulty: { buckets: [{ name: 'all', maxDifficulty: 0.9 }] } }), /difficulty\.buckets\.0\.maxDifficulty: the last bucket must reach 1/);
    assert.match(problems({ ...minimal, difficulty: { park: { low: 0.9, high: 0.1 } } }), /difficulty\.park\.low: must be below park\.high/);
    assert.match(problems({ ...minimal, filters: { idPattern: '(' } }), /filters\.idPattern: is not a regular expression/);
    assert.match(problems({ ...minimal, importer: 'humaneval', derive: { perProblem: 5, maxCandidates: 2 } }), /derive\.maxCandidates: must be at least derive\.perProblem/);
  });

  it('takes a spelled-out mapping for a data set no importer knows', () => {
    const job = resolveJob(
      {
        name: 'mbpp',
        sources: [{ path: '/data/mbpp.jsonl' }],
        mapping: { kind: 'solution', id: 'mbpp-{task_id}', title: 'MBPP {task_id}', description: '{text}', module: 'solution.py', source: '{code}', tests: { style: 'assert-list', asserts: 'test_list', setup: '{test_setup_code}' } },
        derive: {},
      },
      '/jobs',
    );
    assert.equal(job.mapping.kind, 'solution');
    assert.deepEqual([...new RowMapper(job.mapping).requiredColumns().keys()].sort(), ['code', 'task_id', 'test_list', 'test_setup_code', 'text']);
  });
});

describe('RowMapper', () => {
  it('maps a HumanEval row to a solution with a check-function test request', () => {
    const mapper = new RowMapper(Mapping.parse(IMPORTERS.humaneval));
    const mapped = mapper.map({ task_id: 'HumanEval/7', prompt: 'def f(x):\n    """Doc."""\n', canonical_solution: '    return x\n', test: 'def check(candidate):\n    assert candidate(1) == 1\n', entry_point: 'f' });
    assert.ok(mapped.ok);
    assert.equal(mapped.fields.id, 'humaneval-7');
    assert.equal(mapped.fields.module, 'f.py');
    assert.equal(mapped.fields.source, 'def f(x):\n    """Doc."""\n    return x\n');
    assert.deepEqual(mapped.tests, { style: 'check-function', code: 'def check(candidate):\n    assert candidate(1) == 1\n', entry_point: 'f', visible_fraction: 0.5 });
  });

  it('turns a missing column into a reject reason, and CSV-style tags and priorities into values', () => {
    const mapper = new RowMapper(Mapping.parse(IMPORTERS['repair-rows']));
    const row = { id: 'a', title: 't', description: 'd', module: 'm.py', buggy_source: 'b', fixed_source: 'f', visible_tests: 'v', hidden_tests: 'h', tags: 'x, y', priority: '3' };
    const mapped = mapper.map(row);
    assert.ok(mapped.ok);
    assert.deepEqual(mapped.fields.tags, ['x', 'y']);
    assert.equal(mapped.fields.priority, '3');
    const tagsOf = (tags: unknown): unknown => (mapper.map({ ...row, tags }) as { fields: Record<string, unknown> }).fields.tags;
    assert.deepEqual(tagsOf('[arith-op, matrices]'), ['arith-op', 'matrices'], "DuckDB's CSV rendering of a list");
    assert.deepEqual(tagsOf('["a", "b"]'), ['a', 'b']);
    assert.deepEqual(tagsOf(['c']), ['c']);
    const missing = mapper.map({ ...row, hidden_tests: null });
    assert.deepEqual(missing, { ok: false, reason: 'column "hidden_tests" is missing or empty' });
  });
});
