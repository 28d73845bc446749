/**
 * Kafka for `trialrun stack up`: a single-node Apache Kafka 4.x in KRaft mode (one JVM is both
 * broker and controller), run from jars that Maven fetches once into the user cache.
 *
 * kafkajs 2.2.4 predates Kafka 4, which removed old protocol versions (KIP-896). It still works
 * because kafkajs uses the highest version that both sides support, and every API it calls keeps a
 * common one. Against 4.4.0 it settles on Produce v7, Fetch v11, ListOffsets v3, Metadata v6,
 * OffsetCommit v5, OffsetFetch v3, FindCoordinator v2, JoinGroup v5, SyncGroup/Heartbeat/LeaveGroup
 * v3, CreateTopics v3, DeleteTopics v1, DescribeConfigs v2, and v1 of InitProducerId,
 * AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn (so transactions follow the
 * version 1 transaction protocol: the per-transaction epoch bump of KIP-890 needs EndTxn v5, which
 * kafkajs lacks, and 4.x keeps serving older clients). test/integration/stack.test.ts exercises produce,
 * consume, and a transaction with sendOffsets against the broker started here.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeBrokers } from '../connectors/kafka/index.js';
import { checkoutFile } from '../schemas/index.js';
import type { StackComponent, StackLog } from './component.js';
import { daemonFiles, runCommand, runningDaemon, startDaemon, stopDaemon, waitUntil } from './process.js';
import { ensureDir, stackPaths, type StackPaths } from './state.js';

/** The Kafka release `stack up` runs; stack/kafka/pom.xml's default `kafka.version` matches it. */
export const KAFKA_VERSION = '4.4.0';

export interface KafkaOptions {
  /** Bootstrap servers, comma-separated `host:port`. @default env KAFKA_BROKERS, else 'localhost:9092' */
  readonly brokers?: string;
  /** Only check the brokers, never start one (they are the user's). @default true when env KAFKA_BROKERS is set */
  readonly external?: boolean;
  /** @default KAFKA_VERSION */
  readonly version?: string;
  /** @default stackPaths(env) */
  readonly paths?: StackPaths;
  /** Port of the KRaft controller listener. @default 9093 */
  readonly controllerPort?: number;
  /** Broker JVM heap (-Xmx). @default '768m' */
  readonly heap?: string;
  /** How long `ensure` waits for a broker it started. @default 120_000 */
  readonly startTimeoutMs?: number;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const DAEMON = 'kafka';

export function kafkaComponent(options: KafkaOptions = {}): StackComponent {
  const env = options.env ?? process.env;
  const brokers = options.brokers ?? env.KAFKA_BROKERS ?? 'localhost:9092';
  const external = options.external ?? env.KAFKA_BROKERS !== undefined;
  const version = options.version ?? KAFKA_VERSION;
  const paths = options.paths ?? stackPaths(env);
  const brokerList = brokers.split(',').map((b) => b.trim()).filter((b) => b !== '');
  const kafkaDir = join(paths.stateDir, 'kafka');
  const serverProperties = join(kafkaDir, 'server.properties');
  const { logFile } = daemonFiles(paths.stateDir, DAEMON);
  const java = env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
  const isUp = async (): Promise<boolean> => (await probeBrokers(brokerList)) === null;

  return {
    name: 'kafka',
    endpoint: () => brokers,
    isUp,

    async ensure(log: StackLog) {
      if (await isUp()) return 'reused';
      if (external) {
        throw new Error(`no Kafka answers at KAFKA_BROKERS=${brokers}; trialrun starts no broker when KAFKA_BROKERS is set (unset it to use the built-in one)`);
      }
      // A broker we started earlier may still be booting: wait for it instead of starting a second.
      let pid = runningDaemon(paths.stateDir, DAEMON, serverProperties);
      if (pid === undefined) {
        const [host, port] = splitHostPort(brokerList[0] ?? '');
        const libs = await fetchJars(paths.cacheDir, version, logFile, log);
        writeConfig(kafkaDir, host, port, options.controllerPort ?? 9093);
        await formatOnce(kafkaDir, java, libs, serverProperties, logFile, log);
        log(`starting Kafka ${version} on ${brokers} (log: ${logFile})`);
        ({ pid } = await startDaemon(paths.stateDir, {
          name: DAEMON,
          command: java,
          args: [
            `-Xmx${options.heap ?? '768m'}`,
            '-Xms256m',
            '-XX:+UseG1GC',
            '-XX:MaxGCPauseMillis=20',
            '-Djava.awt.headless=true',
            `-Dlog4j2.configurationFile=${join(kafkaDir, 'log4j2.properties')}`,
            '-cp',
            join(libs, '*'),
            'kafka.Kafka',
            serverProperties,
          ],
          env,
        }));
      }
      await waitUntil(isUp, {
        what: `Kafka at ${brokers}`,
        timeoutMs: options.startTimeoutMs ?? 120_000,
        logFile,
        pid,
      });
      return 'started';
    },

    async stop(log: StackLog) {
      if (!external) {
        // Controlled shutdown of a single node takes a few seconds; give it room before SIGKILL.
        if ((await stopDaemon(paths.stateDir, DAEMON, { match: serverProperties, graceMs: 30_000 })) === 'stopped') {
          log(`stopped Kafka on ${brokers}`);
          return 'stopped';
        }
      }
      return (await isUp()) ? 'not-ours' : 'not-running';
    },
  };
}

function splitHostPort(address: string): [string, number] {
  const match = /^(.*):(\d+)$/.exec(address);
  if (!match?.[1] || !match[2]) throw new Error(`bad Kafka address '${address}': expected host:port`);
  return [match[1], Number(match[2])];
}

/**
 * Copies the broker's jars into `<cacheDir>/kafka-<version>/libs` once. Maven writes into a scratch
 * folder that is renamed into place only when complete, so an existing `libs` folder is always usable
 * and a warm `stack up` skips Maven.
 */
async function fetchJars(cacheDir: string, version: string, logFile: string, log: StackLog): Promise<string> {
  const home = ensureDir(cacheDir, `kafka-${version}`);
  const libs = join(home, 'libs');
  if (existsSync(libs)) return libs;
  const partial = join(home, 'libs.partial');
  rmSync(partial, { recursive: true, force: true });
  log(`fetching Kafka ${version} jars with Maven into ${libs} (once)`);
  await runCommand(
    'mvn',
    ['-q', '-B', '-f', checkoutFile('stack/kafka/pom.xml'), `-Dkafka.version=${version}`, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`],
    { logFile },
  );
  renameSync(partial, libs);
  return libs;
}

/** (Re)writes the broker config each start, so edits here reach existing state folders. */
function writeConfig(kafkaDir: string, host: string, port: number, controllerPort: number): void {
  ensureDir(kafkaDir);
  // Bind to loopback only: this is a developer's local broker.
  const bind = host === 'localhost' ? '127.0.0.1' : host;
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@${bind}:${controllerPort}`,
    listeners: `PLAINTEXT://${bind}:${port},CONTROLLER://${bind}:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${host}:${port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': join(kafkaDir, 'data'),
    'num.partitions': 1,
    // One node: every internal topic must make do with one replica.
    'offsets.topic.replication.factor': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    // Fewer internal partitions than the default 50 make the first consumer group and the first
    // transaction start in well under a second.
    'offsets.topic.num.partitions': 8,
    'transaction.state.log.num.partitions': 8,
    // A single local consumer should not wait 3 s for companions that never come.
    'group.initial.rebalance.delay.ms': 0,
    // Topics are declared by the pipelines, so a typo must fail rather than create a topic.
    'auto.create.topics.enable': 'false',
  };
  writeFileSync(
    join(kafkaDir, 'server.properties'),
    Object.entries(settings).map(([key, value]) => `${key}=${value}\n`).join(''),
  );
  writeFileSync(
    join(kafkaDir, 'log4j2.properties'),
    [
      'appender.out.type=Console',
      'appender.out.name=out',
      'appender.out.layout.type=PatternLayout',
      'appender.out.layout.pattern=[%d] %p %m (%c)%n',
      'rootLogger.level=INFO',
      'rootLogger.appenderRef.out.ref=out',
      // Per-partition state changes and request logs flood the log at INFO.
      'logger.state.name=state.change.logger',
      'logger.state.level=WARN',
      'logger.request.name=kafka.request.logger',
      'logger.request.level=WARN',
      '',
    ].join('\n'),
  );
}

/**
 * Formats the KRaft storage the first time only (`kafka-storage format`); the cluster id is kept in
 * the state folder so a re-format after deleting the data keeps the same id.
 */
async function formatOnce(
  kafkaDir: string,
  java: string,
  libs: string,
  serverProperties: string,
  logFile: string,
  log: StackLog,
): Promise<void> {
  if (existsSync(join(kafkaDir, 'data', 'meta.properties'))) return;
  const idFile = join(kafkaDir, 'cluster-id');
  if (!existsSync(idFile)) writeFileSync(idFile, `${newClusterId()}\n`);
  const clusterId = readFileSync(idFile, 'utf8').trim();
  log(`formatting Kafka storage in ${join(kafkaDir, 'data')} (cluster id ${clusterId})`);
  await runCommand(
    java,
    ['-cp', join(libs, '*'), `-Dlog4j2.configurationFile=${join(kafkaDir, 'log4j2.properties')}`, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', serverProperties],
    { logFile },
  );
}

/** A Kafka Uuid as `kafka-storage random-uuid` prints it: 16 random bytes, base64url, never starting with '-'. */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}
