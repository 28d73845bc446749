/**
 * Layering, enforced by `npm run lint`:
 *   schemas <- connectors <- envs <- policies <- pipelines <- cli
 *   stack (the local services) depends on schemas and connectors; cli may use everything.
 *   dashboard (the live web page and /metrics) reads topics, views and processor metrics: schemas, connectors, pipelines.
 * The Kafka client is reached through connectors/kafka only, so it can be swapped there alone; the AWS SDK through connectors/storage.
 * Across top-level folders only a folder's index may be imported (no deep imports), and there are no cycles.
 */
const LAYERS = {
  schemas: [],
  connectors: ['schemas'],
  envs: ['schemas', 'connectors'],
  policies: ['schemas', 'connectors', 'envs'],
  pipelines: ['schemas', 'connectors', 'envs', 'policies'],
  stack: ['schemas', 'connectors'],
  dashboard: ['schemas', 'connectors', 'pipelines'],
};

const layerRules = Object.entries(LAYERS).map(([layer, allowed]) => ({
  name: `layer-${layer}`,
  comment: `${layer}/ may depend on ${allowed.length ? allowed.join(', ') : 'nothing else in the project'}`,
  severity: 'error',
  from: { path: `^${layer}/` },
  to: {
    path: '^(schemas|connectors|envs|policies|pipelines|stack|dashboard|cli)/',
    pathNot: [`^${layer}/`, ...allowed.map((dep) => `^${dep}/`)],
  },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    ...layerRules,
    {
      name: 'no-deep-imports',
      comment: 'Reach another module (connectors/kafka, pipelines/runtime, ...) through its index.ts only.',
      severity: 'error',
      from: { path: '^((connectors|envs|policies|pipelines)/[^/]+|schemas|stack|dashboard|cli)/' },
      to: { path: '^(connectors|envs|policies|pipelines)/[^/]+/', pathNot: ['^$1/', '/index\\.ts$'] },
    },
    {
      name: 'no-deep-dashboard-imports',
      comment: 'Outside dashboard/, import dashboard/index.ts only.',
      severity: 'error',
      from: { pathNot: '^dashboard/' },
      to: { path: '^dashboard/', pathNot: '^dashboard/index\\.ts$' },
    },
    {
      name: 'no-deep-schema-imports',
      comment: 'Outside schemas/, import schemas/index.ts only.',
      severity: 'error',
      from: { pathNot: '^schemas/' },
      to: { path: '^schemas/', pathNot: '^schemas/index\\.ts$' },
    },
    {
      name: 'kafka-client-behind-its-port',
      comment: 'Only connectors/kafka imports a Kafka client (kafkajs, @confluentinc/kafka-javascript); everything else uses its port.',
      severity: 'error',
      from: { pathNot: '^connectors/kafka/' },
      to: { path: 'node_modules/(kafkajs|@confluentinc/kafka-javascript)/' },
    },
    {
      name: 's3-client-behind-its-port',
      comment: 'Only connectors/storage imports the AWS SDK; everything else uses the BlobStore port.',
      severity: 'error',
      from: { pathNot: '^connectors/storage/' },
      to: { path: 'node_modules/@aws-sdk/' },
    },
    {
      name: 'tests-stay-out-of-production',
      severity: 'error',
      from: { pathNot: '\\.test\\.ts$|^test/' },
      to: { path: '\\.test\\.ts$|^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // node_modules stays in the graph (not followed) so that rules can name packages, e.g. kafkajs.
    exclude: { path: '^dist/' },
  },
};
