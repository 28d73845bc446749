import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkoutFile } from '../../../schemas/index.js';
import { RowCheckPool } from './check-pool.js';
import { RowChecker, rowCheckSettings, type MappedItem } from './row-check.js';
import { resolveJob } from './spec.js';

const settings = rowCheckSettings(resolveJob({ name: 'pool-test', importer: 'repair-rows', sources: [{ path: 'rows.jsonl' }] }, '/').spec, 'repair');
const items: MappedItem[] = readFileSync(checkoutFile(join('tasks', 'repair-bundle.jsonl')), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line, index) => ({ source: join('bundle', 'rows.jsonl'), row: index + 1, fields: JSON.parse(line) as Record<string, unknown>, tests: null }));
// One row no contract takes, so refusals cross the thread too.
items.push({ source: 'bundle/rows.jsonl', row: items.length + 1, fields: { id: 'no fields' }, tests: null });

describe('RowCheckPool', () => {
  it('answers each batch with what RowChecker says in this thread, in order, whichever worker took it', async () => {
    const pool = new RowCheckPool(settings, 2);
    try {
      const batches = [items.slice(0, 10), items.slice(10, 25), items.slice(25)];
      const answers = await Promise.all(batches.map((batch) => pool.check(batch)));
      const checker = new RowChecker(settings);
      // Structured cloning makes the digests and kept bits plain Uint8Arrays: compare their bytes.
      const plain = (rows: readonly unknown[]) => JSON.parse(JSON.stringify(rows, (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value))) as unknown;
      assert.deepEqual(plain(answers.flat()), plain(items.map((item) => checker.check(item))));
      assert.equal(answers.flat().filter((row) => !row.valid).length, 1);
    } finally {
      await pool.close();
    }
  });

  it('refuses batches once closed', async () => {
    const pool = new RowCheckPool(settings, 1);
    await pool.close();
    await assert.rejects(pool.check(items.slice(0, 1)), /closed/);
  });
});
