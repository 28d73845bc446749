import { sha256Hex } from '../../connectors/checkpoints/index.js';
import { readRange } from '../../connectors/kafka/index.js';
import { LINEAR_REPAIR_POLICY, policyIds } from '../../policies/index.js';
import { ConfigError, nowIso, type PolicyCheckpoint, type PolicyPin } from '../../schemas/index.js';
import type { Command } from '../command.js';
import { processorContext } from '../context.js';
import { choiceOption } from '../options.js';
import { checkpointStore } from '../paths.js';

async function checkpointHistory(policyId: string): Promise<Map<number, PolicyCheckpoint>> {
  const context = await processorContext(['policyCheckpoints']);
  const byVersion = new Map<number, PolicyCheckpoint>();
  await readRange(context.kafka, {
    topic: context.names.name('policyCheckpoints'),
    from: 'earliest',
    to: 'latest',
    groupId: `trialrun-policy-cli-${process.pid}-${Date.now()}`,
    onRecord: async ({ key, value }) => {
      if (key !== policyId || value === null) return;
      const checkpoint = await context.serde.decode('policyCheckpoints', value);
      byVersion.set(checkpoint.version, checkpoint);
    },
  });
  return byVersion;
}

async function publishPin(pin: PolicyPin): Promise<void> {
  const context = await processorContext(['policyPins']);
  await context.serde.register(['policyPins']);
  const producer = context.kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: context.names.name('policyPins'), messages: [{ key: pin.policyId, value: await context.serde.encode('policyPins', pin) }] });
  } finally {
    await producer.disconnect();
  }
}

/** Version 0, the initial policy (for an LLM the base model): no artifact, the digest of no bytes. */
function initialCheckpoint(policyId: string): PolicyCheckpoint {
  return {
    policyId,
    version: 0,
    parentVersion: null,
    featureNames: [],
    weights: [],
    sha256: sha256Hex(Buffer.alloc(0)),
    artifact: null,
    metrics: { samples: 0, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
    lineage: { taskId: 'all', attempt: 0, runId: 'rollback', policyVersion: 0, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
  };
}

export const policyCommand: Command = {
  name: 'policy',
  summary:
    'Policy versions.\n' +
    '  list               versions in the checkpoint store and on the checkpoint topic\n' +
    '  rollback <version> pin rollout workers to an older version (they verify its sha256 and switch between episodes;\n' +
    '                     for llm, weight sync serves it); 0 is the initial policy (llm: the base model)\n' +
    '  unpin              let rollout workers follow the newest version again',
  usage: 'list|rollback <version>|unpin',
  options: {
    policy: { type: 'string', default: LINEAR_REPAIR_POLICY },
  },
  help: { policy: `policy id (${policyIds().join(', ')})` },
  async run(values, [action, version, ...extra]) {
    if (extra.length > 0 || (version !== undefined && action !== 'rollback')) throw new ConfigError(`expected list, rollback <version> or unpin, got "${[action, version, ...extra].join(' ')}"`);
    const policyId = choiceOption(values, 'policy', policyIds());
    const store = checkpointStore();
    if (action === 'list') {
      const history = await checkpointHistory(policyId);
      for (const { version: v, artifact } of await store.list(policyId)) {
        const record = history.get(v);
        const metrics = record ? `samples ${record.metrics.samples}, mean reward ${record.metrics.meanReward.toFixed(3)}` : 'record compacted away';
        process.stdout.write(`v${v}  ${artifact.sha256.slice(0, 12)}  ${artifact.bytes} bytes  ${metrics}\n`);
      }
      return 0;
    }
    if (action === 'rollback') {
      const wanted = Number(version);
      if (!/^\d+$/.test(version ?? '') || !Number.isSafeInteger(wanted)) throw new ConfigError(`rollback needs a version >= 0, got "${version ?? ''}"`);
      if (wanted === 0) {
        await publishPin({ policyId, checkpoint: initialCheckpoint(policyId), reason: 'rollback to v0', createdAt: nowIso() });
        process.stdout.write(`pinned ${policyId} to v0 (the initial policy)\n`);
        return 0;
      }
      const versions = await store.list(policyId);
      const entry = versions.find((e) => e.version === wanted);
      if (!entry) {
        const known = versions.map((e) => `v${e.version}`);
        throw new ConfigError(`${policyId} v${wanted} is not in the checkpoint store; it has ${known.length ? known.join(', ') : 'no versions'} (see trialrun policy list)`);
      }
      await store.get(entry.artifact); // refuse to pin bytes that fail their digest
      const record = (await checkpointHistory(policyId)).get(wanted);
      // The record may be compacted away; the artifact is what workers load, so rebuild the record around it.
      const checkpoint: PolicyCheckpoint = record ?? {
        policyId,
        version: wanted,
        parentVersion: null,
        featureNames: [],
        weights: [],
        sha256: entry.artifact.sha256,
        artifact: entry.artifact,
        metrics: { samples: 0, meanReward: 0, meanAbsAdvantage: 0, gradNorm: 0, staleDropped: 0, extra: {} },
        lineage: { taskId: 'all', attempt: 0, runId: 'rollback', policyVersion: wanted, sandboxImageDigest: null, verifierVersion: null, createdAt: nowIso() },
      };
      await publishPin({ policyId, checkpoint, reason: `rollback to v${wanted}`, createdAt: nowIso() });
      process.stdout.write(`pinned ${policyId} to v${wanted} (${entry.artifact.sha256.slice(0, 12)})\n`);
      return 0;
    }
    if (action === 'unpin') {
      await publishPin({ policyId, checkpoint: null, reason: 'follow the newest version', createdAt: nowIso() });
      process.stdout.write(`${policyId} follows the newest version again\n`);
      return 0;
    }
    throw new ConfigError(`expected list, rollback <version> or unpin, got "${action ?? ''}"`);
  },
};
