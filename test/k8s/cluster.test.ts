import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { dockerClient, dockerComponent } from '../../stack/docker.js';
import { k8sComponent, k8sPaths, kubectl, stackUp } from '../../stack/index.js';
import { imagesComponent } from '../../stack/images.js';

/**
 * `stack up --k8s` against the real thing: k3s (built once from source, cached) with its kubelet on the stack's
 * Docker engine on this cgroup v1 kernel: a Ready node, an idempotent ensure, and a stop that leaves no pod
 * container behind. No pod runs here yet (docs/kubernetes.md: the VM refuses the pause container's negative OOM
 * score). Run by `npm run test:k8s`, not by the README's test command: the first build takes tens of minutes.
 */
const log = (line: string): void => console.log(`# ${line}`);
const cluster = k8sComponent();
const paths = k8sPaths();

// The cluster costs CPU on two shared cores: the file leaves it stopped, as `stack down` would.
after(async () => {
  await cluster.stop(log);
});

test('stack up --k8s brings up a Ready node and is idempotent', { timeout: 3_600_000 }, async () => {
  await stackUp(log, [dockerComponent(), imagesComponent(), cluster]);
  assert.equal(await cluster.ensure(log), 'reused');
  assert.equal(await cluster.isUp(), true);
  const nodes = JSON.parse(await kubectl(paths, ['get', 'nodes', '-o', 'json'])) as { items: Array<{ status: { nodeInfo: { containerRuntimeVersion: string; kubeletVersion: string } } }> };
  assert.equal(nodes.items.length, 1);
  assert.match(nodes.items[0]!.status.nodeInfo.containerRuntimeVersion, /^docker:\/\//);
  assert.match(nodes.items[0]!.status.nodeInfo.kubeletVersion, /^v1\.35\./);
});

test('stop deletes the pods and leaves no pod container on the engine; ensure starts it again', { timeout: 600_000 }, async () => {
  assert.equal(await cluster.stop(log), 'stopped');
  assert.equal(await cluster.isUp(), false);
  const left = await dockerClient().listContainers({ all: true, filters: { label: ['io.kubernetes.docker.type'] } });
  assert.deepEqual(left.map((c) => c.Names), []);
  assert.equal(await cluster.ensure(log), 'started');
  assert.equal(await cluster.isUp(), true);
});
