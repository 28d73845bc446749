import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../schemas/index.js';
import { dashboardSettings } from './dashboard.js';

test('the dashboard flags are checked before anything connects, in the words of the flags', () => {
  assert.throws(() => dashboardSettings({ port: '70000' }), /^ConfigError: --port must be a whole number in \[0, 65535\].*"70000"/);
  assert.throws(() => dashboardSettings({ port: 'http' }), /--port must be a whole number >= 0, got "http"/);
  assert.throws(() => dashboardSettings({ port: '-1' }), ConfigError);
  assert.throws(() => dashboardSettings({ host: 'two words' }), /^ConfigError: --host: "two words" is neither/);
  assert.throws(() => dashboardSettings({ host: '' }), /--host needs a value/);
  assert.throws(() => dashboardSettings({ run: ' ' }), /--run needs a value/);
  const settings = dashboardSettings({ host: '0.0.0.0', port: '0', run: 'r1', 'data-dir': '/tmp/store' });
  assert.deepEqual(settings, { dataDir: '/tmp/store', host: '0.0.0.0', port: 0, runId: 'r1' });
  assert.equal(dashboardSettings({}).host, undefined, 'DashboardOptions holds the default (127.0.0.1)');
});
