import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WarmPool, type WarmPoolHooks } from './warm-pool.js';

interface Item {
  readonly n: number;
  alive: boolean;
  destroyed: number;
}

function fakeHooks(options: { failFirst?: number; gate?: Promise<void> } = {}) {
  const created: Item[] = [];
  const warnings: string[] = [];
  let failures = options.failFirst ?? 0;
  const hooks: WarmPoolHooks<string, Item> = {
    async create() {
      await (options.gate ?? sleep(1));
      if (failures > 0) {
        failures--;
        throw new Error('engine down');
      }
      const item = { n: created.length, alive: true, destroyed: 0 };
      created.push(item);
      return item;
    },
    async destroy(item) {
      item.destroyed++;
      item.alive = false;
    },
    isUsable: (item) => item.alive,
    warn: (message) => void warnings.push(message),
  };
  return { hooks, created, warnings };
}

async function until(what: string, probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('WarmPool', () => {
  it('hands out a pre-started item and starts its replacement in the background', async () => {
    const { hooks, created } = fakeHooks();
    const pool = new WarmPool(hooks, { size: 2, maxIdleMs: 60_000 });
    const cold = await pool.take('k', 'spec');
    await until('two warm items', () => pool.stats.ready === 2);
    const warm = await pool.take('k', 'spec');
    assert.notEqual(warm, cold);
    assert.ok(created.indexOf(warm) > created.indexOf(cold), 'the second take got a pre-started item');
    await until('the pool topped up again', () => pool.stats.ready === 2);
    await pool.close();
  });

  it('never hands an item out twice, and destroys each retired item exactly once', async () => {
    const { hooks, created } = fakeHooks();
    const pool = new WarmPool(hooks, { size: 1, maxIdleMs: 60_000 });
    const seen = new Set<Item>();
    for (let i = 0; i < 20; i++) {
      const item = await pool.take('k', 'spec');
      assert.ok(!seen.has(item), `item ${item.n} was handed out twice`);
      seen.add(item);
      pool.retire(item);
    }
    await pool.close();
    assert.ok(created.every((item) => item.destroyed === 1), 'every item destroyed exactly once');
  });

  it('skips items that died while they waited', async () => {
    const { hooks, created } = fakeHooks();
    const pool = new WarmPool(hooks, { size: 2, maxIdleMs: 60_000 });
    pool.retire(await pool.take('k', 'spec'));
    await until('two warm items', () => pool.stats.ready === 2);
    const waiting = await Promise.all([pool.take('k', 'spec'), pool.take('k', 'spec')]);
    for (const item of waiting) pool.retire(item);
    await until('two new warm items', () => pool.stats.ready === 2);
    // Both waiting items die (their engine restarted, say): the next take must start a live one instead.
    for (const item of created.filter((c) => c.destroyed === 0)) item.alive = false;
    const next = await pool.take('k', 'spec');
    assert.equal(next.alive, true);
    pool.retire(next);
    await pool.close();
  });

  it('backs off after failures, reports them, and recovers', async () => {
    const { hooks, warnings } = fakeHooks({ failFirst: 3 });
    const pool = new WarmPool(hooks, { size: 1, maxIdleMs: 60_000 });
    await assert.rejects(pool.take('k', 'spec'), /engine down/, 'a cold start during the outage fails to the caller');
    await until('the pool recovered', () => pool.stats.ready === 1, 10_000);
    assert.ok(warnings.length >= 1 && warnings.every((w) => /retrying in \d+ ms\): engine down/.test(w)), warnings.join('\n'));
    const item = await pool.take('k', 'spec');
    assert.equal(item.alive, true);
    pool.retire(item);
    await pool.close();
  });

  it('destroys the warm items of a key nobody asked for within maxIdleMs', async () => {
    const { hooks, created } = fakeHooks();
    const pool = new WarmPool(hooks, { size: 2, maxIdleMs: 200 });
    pool.retire(await pool.take('k', 'spec'));
    await until('two warm items', () => pool.stats.ready === 2);
    await until('the idle items are gone', () => pool.stats.ready === 0 && pool.stats.pending === 0, 5_000);
    assert.ok(created.every((item) => item.destroyed === 1));
    await pool.close();
  });

  it('close waits for creations in flight and destroys what they produce', async () => {
    // Creations wait on a gate, so they are surely in flight when close starts, however slow the machine.
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const { hooks, created } = fakeHooks({ gate });
    const pool = new WarmPool(hooks, { size: 3, maxIdleMs: 60_000 });
    const first = pool.take('k', 'spec');
    await until('the refills to be in flight', () => pool.stats.creating >= 3);
    const closing = pool.close();
    open();
    await closing;
    const item = await first;
    await until('the cold item is destroyed too', () => item.destroyed === 1);
    assert.ok(created.every((c) => c.destroyed === 1), `${created.filter((c) => c.destroyed !== 1).length} items leaked`);
    await assert.rejects(pool.take('k', 'spec'), /closed/);
  });
});
