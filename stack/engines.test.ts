import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../schemas/index.js';
import { enginePaths, extraEngineComponent, extraEngineComponents, MAX_ENGINES } from './engines.js';

test('each further engine has its own socket, data root, exec root and pid file, apart from the stack engine and from each other', () => {
  const [two, three] = [enginePaths(2, '/state'), enginePaths(3, '/state')];
  assert.equal(two.host, 'unix:///state/engines/2/docker.sock');
  assert.equal(two.dataRoot, '/state/engines/2/data');
  assert.equal(two.pidFile, '/state/engines/2/dockerd.pid');
  assert.match(two.execRoot, /^\/run\/trialrun-[0-9a-f]{8}-engine-2$/);
  for (const key of ['host', 'dataRoot', 'execRoot', 'pidFile', 'daemon'] as const) assert.notEqual(two[key], three[key], key);
  assert.notEqual(enginePaths(2, '/other').execRoot, two.execRoot, 'two state folders never share an exec root');
  assert.ok(!Object.values(two).some((path) => path.includes('/var/lib/docker') || path === 'unix:///var/run/docker.sock'));
});

test('engine counts outside 1..MAX_ENGINES are refused; 1 adds nothing, N adds N-1 engines each followed by its images', () => {
  assert.deepEqual(extraEngineComponents(1, undefined, '/state'), []);
  assert.deepEqual(extraEngineComponents(3, undefined, '/state').map((c) => c.name), ['docker-2', 'sandbox-images-2', 'docker-3', 'sandbox-images-3']);
  assert.throws(() => extraEngineComponents(MAX_ENGINES + 1), (error: unknown) => error instanceof ConfigError && /engines must be a whole number from 1 to 4, got 5/.test(error.message));
  assert.throws(() => extraEngineComponent({ index: 1 }), (error: unknown) => error instanceof ConfigError && /index must be a whole number from 2 to 4, got 1/.test(error.message));
});
