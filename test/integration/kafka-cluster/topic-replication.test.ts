import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import { loadConfig } from '../../../src/config/config.js';
import { untilKnown, waitForLeaders } from '../../../src/kafka/topics.js';
import { createLogger } from '../../../src/observability/logger.js';
import { openKafka, runsOnKafka } from '../../../src/runtime/kafka-runtime.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';
import { withAdmin } from '../../support/kafka-cluster.js';
import { clusterSuite } from './cluster-suite.js';

/** The fewest replicas of any partition, and the topic's min.insync.replicas. */
async function replicationOf(kafka: Kafka, topic: string): Promise<{ replicas: number; minInsyncReplicas: string | undefined }> {
  return withAdmin(kafka, async (admin) => {
    // The broker asked may not have applied a topic created through another one yet.
    await waitForLeaders(admin, [topic]);
    const metadata = await untilKnown(`metadata of ${topic}`, () => admin.fetchTopicMetadata({ topics: [topic] }));
    const replicas = Math.min(...metadata.topics.flatMap((t) => t.partitions.map((p) => p.replicas.length)));
    const { resources } = await untilKnown(`the configuration of ${topic}`, () =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['min.insync.replicas'] }],
      }),
    );
    return { replicas, minInsyncReplicas: resources[0]?.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue };
  });
}

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly topics?: { topic: string; replicas: number; minInsyncReplicas?: number }[];
}

/** Runs the gateway's Kafka start-up (topic creation and the replication check) with its log lines kept. */
async function openKafkaLogged(env: Record<string, string>): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const config = loadConfig({ AUTH_JWT_SECRET: 's'.repeat(32), ...env });
  if (!runsOnKafka(config)) throw new Error('the environment names no KAFKA_BROKERS');
  await openKafka(config, createLogger('info', sink));
  return lines;
}

const PINO_WARN = 40;

describe('topic replication on a three-node cluster', function () {
  this.timeout(120_000);

  it('creates the gateway topics with 3 replicas and min.insync.replicas 2 when neither is configured', async () => {
    const { kafka, topics } = clusterSuite();
    // The suite's gateway created these two itself (the command topics were there before it).
    for (const topic of [topics.events, topics.deadLetter]) {
      expect(await replicationOf(kafka, topic), topic).to.deep.equal({ replicas: 3, minInsyncReplicas: '2' });
    }
  });

  it('warns once at start when a topic it writes has fewer replicas than it asks for, and takes configured values as they are', async () => {
    const { cluster, kafka } = clusterSuite();
    const run = randomBytes(4).toString('hex');
    const thin = `thin.commands.${run}`;
    await withAdmin(kafka, async (admin) => {
      await admin.createTopics({ waitForLeaders: false, topics: [{ topic: thin, numPartitions: 1, replicationFactor: 1 }] });
      await waitForLeaders(admin, [thin]);
    });
    const names = { events: `events.${run}`, commands: { ...commandTopicNames((name) => `${name}.${run}`), enrollmentCommands: thin }, dlq: `dlq.${run}` };
    const lines = await openKafkaLogged({
      KAFKA_BROKERS: cluster.brokers.join(','),
      EVENTS_TOPICS: names.events,
      ...commandTopicEnvironment(names.commands),
      EVENTS_DLQ_TOPIC: names.dlq,
    });
    const warnings = lines.filter((l) => l.level === PINO_WARN && /replicated less/.test(l.msg));
    expect(warnings, 'replication warnings').to.have.length(1);
    expect(warnings[0]!.topics).to.deep.equal([{ topic: thin, replicas: 1, minInsyncReplicas: 2 }]);
    expect(await replicationOf(kafka, names.commands.edgePolicyCommands)).to.deep.equal({ replicas: 3, minInsyncReplicas: '2' });

    const explicit = { events: `events.x.${run}`, ...commandTopicNames((name) => `${name}.x.${run}`), dlq: `dlq.x.${run}` };
    const explicitLines = await openKafkaLogged({
      KAFKA_BROKERS: cluster.brokers.join(','),
      KAFKA_REPLICATION_FACTOR: '2',
      KAFKA_MIN_INSYNC_REPLICAS: '1',
      EVENTS_TOPICS: explicit.events,
      ...commandTopicEnvironment(explicit),
      EVENTS_DLQ_TOPIC: explicit.dlq,
    });
    expect(explicitLines.filter((l) => l.level === PINO_WARN && /replicated less/.test(l.msg)), 'warnings with explicit settings').to.deep.equal([]);
    for (const topic of Object.values(explicit)) expect(await replicationOf(kafka, topic), topic).to.deep.equal({ replicas: 2, minInsyncReplicas: '1' });
  });
});
