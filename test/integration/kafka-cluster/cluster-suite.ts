import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { nodeIdOf, startLocalKafkaCluster, waitForFullIsr, withAdmin, type LocalKafkaCluster } from '../../support/kafka-cluster.js';
import { waitForLeaders } from '../../../src/kafka/topics.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { commandTopicEnvironment, commandTopicList, commandTopicNames, type CommandTopicNames } from '../../support/command-topics.js';

export const CLUSTER_NODES = 3;
const PARTITIONS = 3;
/** The node that leads the most command partitions (every one of the first command topic, enrollment's) when the suite starts. */
const FIRST_COMMAND_LEADER = 1;

export interface ClusterTopics {
  readonly events: string;
  /** Each catalogue entry's command topic, by its key in config.topics. */
  readonly commands: CommandTopicNames;
  readonly deadLetter: string;
}

/** One three-node cluster and one gateway (ROLE=all on chDB) for the whole run; tests keep apart by tenant. */
export interface ClusterSuite {
  readonly cluster: LocalKafkaCluster;
  /** A plain kafkajs client, standing for the other services and for the tests' own checks. */
  readonly kafka: Kafka;
  readonly gateway: TestGateway;
  readonly topics: ClusterTopics;
  readonly commandTopics: readonly string[];
  readonly consumerGroup: string;
}

let suite: ClusterSuite | undefined;
let cluster: LocalKafkaCluster | undefined;
let gateway: TestGateway | undefined;

export function clusterSuite(): ClusterSuite {
  if (suite === undefined) throw new Error('the Kafka cluster suite is not running: load cluster-suite.ts with --require');
  return suite;
}

/** Every topic the gateway reads or writes. */
export function allTopics(topics: ClusterTopics): string[] {
  return [topics.events, ...commandTopicList(topics.commands), topics.deadLetter];
}

/**
 * The command topics exist before the gateway starts, laid out so that one node leads every
 * partition of the first (enrollment's) and one partition of each other (edge policy's),
 * while their other partitions have the other two nodes as leaders. Killing that node takes the leader of most
 * partitions being written while the rest stay up, so a send spanning all three brokers
 * loses one of them and its partitions move to a broker that has already answered for the
 * same send (the case kafkajs mishandles: src/kafka/complete-send.ts). Replicas are listed in
 * the same rotation everywhere, so each election moves the dead node's partitions to the
 * next node. The gateway creates the event topic and the DLQ itself, so they show the
 * replication it picks.
 */
async function createCommandTopics(kafka: Kafka, commandTopics: readonly string[]): Promise<void> {
  const rotation = (first: number) => Array.from({ length: CLUSTER_NODES }, (_, i) => nodeIdOf((first + i) % CLUSTER_NODES));
  const assignment = (firstOf: (partition: number) => number) =>
    Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, replicas: rotation(firstOf(partition)) }));
  await withAdmin(kafka, async (admin) => {
    await admin.createTopics({
      waitForLeaders: false,
      topics: commandTopics.map((topic, index) => ({
        topic,
        replicaAssignment: assignment((partition) => (index === 0 ? FIRST_COMMAND_LEADER : FIRST_COMMAND_LEADER + partition)),
        configEntries: [{ name: 'min.insync.replicas', value: '2' }],
      })),
    });
    await waitForLeaders(admin, [...commandTopics]);
  });
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(300_000);
    const started = Date.now();
    cluster = await startLocalKafkaCluster(CLUSTER_NODES);
    console.log(`      Kafka cluster: ${CLUSTER_NODES} nodes at ${cluster.brokers.join(',')}, started in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const kafka = new Kafka({ clientId: `test-${randomBytes(4).toString('hex')}`, brokers: [...cluster.brokers], logLevel: logLevel.NOTHING });
    await waitFor('all three brokers in the cluster metadata', async () =>
      withAdmin(kafka, async (admin) => ((await admin.describeCluster()).brokers.length === CLUSTER_NODES ? true : undefined)), 60_000, 250);

    const run = randomBytes(4).toString('hex');
    const topics: ClusterTopics = {
      events: `platform.events.${run}`,
      commands: commandTopicNames((name) => `${name}.${run}`),
      deadLetter: `platform.events.dlq.${run}`,
    };
    const commandTopics = commandTopicList(topics.commands);
    await createCommandTopics(kafka, commandTopics);
    const consumerGroup = `core-gateway-ingest-${run}`;
    gateway = await startTestGateway({
      KAFKA_BROKERS: cluster.brokers.join(','),
      EVENTS_TOPICS: topics.events,
      ...commandTopicEnvironment(topics.commands),
      EVENTS_DLQ_TOPIC: topics.deadLetter,
      KAFKA_CONSUMER_GROUP: consumerGroup,
      KAFKA_TOPIC_PARTITIONS: String(PARTITIONS),
      INGEST_BATCH_WAIT_MS: '50',
      LOG_LEVEL: process.env['CLUSTER_GATEWAY_LOG_LEVEL'] ?? 'silent',
    });
    suite = { cluster, kafka, gateway, topics, commandTopics, consumerGroup };
  },

  /** Each test starts on a whole cluster, whatever the one before it left down. */
  async beforeEach(this: Mocha.Context): Promise<void> {
    if (suite === undefined) return;
    this.timeout(240_000);
    await suite.cluster.resumeAll();
    await waitForFullIsr(suite.kafka, allTopics(suite.topics), CLUSTER_NODES);
  },

  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(120_000);
    try {
      await gateway?.close();
    } finally {
      await cluster?.stop();
    }
  },
};
