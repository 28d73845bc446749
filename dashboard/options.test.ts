import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { DEFAULT_DASHBOARD_PORT, resolveDashboardOptions } from './options.js';

test('the dashboard binds to the loopback address by default', () => {
  const resolved = resolveDashboardOptions({ dataDir: '/tmp/data' });
  assert.equal(resolved.host, '127.0.0.1');
  assert.equal(resolved.port, DEFAULT_DASHBOARD_PORT);
  assert.equal(resolved.refreshMs, 2000);
  assert.equal(resolved.runId, null);
  assert.equal(resolved.pool, null);
  assert.equal(resolveDashboardOptions({ dataDir: '/d', host: '0.0.0.0', port: 0 }).port, 0);
  assert.equal(resolveDashboardOptions({ dataDir: '/d', host: 'localhost' }).host, 'localhost');
});

test('bad ports, hosts and refresh intervals are refused before anything listens', () => {
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', port: 65536 }), /port must be a whole number in \[0, 65535\].*65536/);
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', port: -1 }), ConfigError);
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', port: 80.5 }), ConfigError);
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', host: 'not a host' }), /"not a host" is neither an IP address nor a host name/);
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', refreshMs: 10 }), /at least 100 ms/);
  assert.throws(() => resolveDashboardOptions({ dataDir: '/d', runId: ' ' }), /runId is empty/);
  assert.throws(() => resolveDashboardOptions({ dataDir: '' }), /dataDir is required/);
});
