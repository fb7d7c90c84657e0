import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import { pickInfra, startInfra, type TestInfra } from '../../support/infra.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';

export interface Topics {
  readonly events: string;
  readonly enrollments: string;
  readonly edgePolicies: string;
  readonly deadLetter: string;
}

export interface KafkaSuite {
  readonly infra: TestInfra;
  readonly gateway: TestGateway;
  /** A plain kafkajs client, standing for the other services that read and write the topics. */
  readonly kafka: Kafka;
  readonly topics: Topics;
  readonly consumerGroup: string;
}

let suite: KafkaSuite | undefined;
/** Readers still connected; the root hook stops them, so a failed test leaves no client reconnecting to a stopped broker. */
const openReaders = new Set<Consumer>();

/** The Kafka infrastructure and the Kafka-mode gateway of this mocha process, started by the root hook. */
export function kafkaSuite(): KafkaSuite {
  if (suite === undefined) throw new Error('the Kafka suite is not running: load kafka-suite.ts with --require');
  return suite;
}

export interface ReceivedMessage {
  readonly topic: string;
  readonly partition: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Record<string, string>;
  readonly offset: string;
}

function received(topic: string, partition: number, m: KafkaMessage): ReceivedMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.headers ?? {})) headers[name] = String(Array.isArray(value) ? value[0] : value);
  return { topic, partition, key: m.key?.toString() ?? null, value: m.value?.toString() ?? null, headers, offset: m.offset };
}

export interface TopicReader {
  readonly messages: ReceivedMessage[];
  waitFor(what: string, predicate: (m: ReceivedMessage) => boolean, count?: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  stop(): Promise<void>;
}

/**
 * Reads topics from the beginning, as committed data, with a group of its own. Tests wait
 * on it for the messages they expect; stop() disconnects it (and the suite does, if a test
 * did not get that far).
 */
export async function topicReader(topics: string[]): Promise<TopicReader> {
  const messages: ReceivedMessage[] = [];
  const consumer: Consumer = kafkaSuite().kafka.consumer({ groupId: `reader-${randomBytes(6).toString('hex')}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  openReaders.add(consumer);
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      messages.push(received(topic, partition, message));
    },
  });
  return {
    messages,
    waitFor(what, predicate, count = 1, timeoutMs = 20_000) {
      return waitFor(
        `${count} message(s): ${what}`,
        async () => {
          const found = messages.filter(predicate);
          return found.length >= count ? found : undefined;
        },
        timeoutMs,
        50,
      );
    },
    async stop() {
      openReaders.delete(consumer);
      await consumer.disconnect();
    },
  };
}

/** Every message now on the topics: read until each partition's end as it was when the call began. */
export async function readTopicsToEnd(topics: string[], timeoutMs = 60_000): Promise<ReceivedMessage[]> {
  const admin = kafkaSuite().kafka.admin();
  await admin.connect();
  const ends = new Map<string, bigint>();
  try {
    for (const topic of topics) {
      for (const { partition, high } of await admin.fetchTopicOffsets(topic)) ends.set(`${topic}/${partition}`, BigInt(high));
    }
  } finally {
    await admin.disconnect();
  }
  const reader = await topicReader(topics);
  try {
    await waitFor('the topics read to their end', async () => {
      const next = new Map<string, bigint>();
      for (const m of reader.messages) next.set(`${m.topic}/${m.partition}`, BigInt(m.offset) + 1n);
      return [...ends].every(([tp, end]) => end === 0n || (next.get(tp) ?? 0n) >= end) ? true : undefined;
    }, timeoutMs, 100);
    return [...reader.messages];
  } finally {
    await reader.stop();
  }
}

/** Root hooks, loaded with --require. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(300_000);
    const kind = await pickInfra();
    console.log(`      Kafka suite infrastructure: ${kind}`);
    const infra = await startInfra(kind);
    const run = randomBytes(4).toString('hex');
    const topics: Topics = {
      events: `platform.events.${run}`,
      enrollments: `core.device-enrollment.commands.${run}`,
      edgePolicies: `core.edge-policy.commands.${run}`,
      deadLetter: `platform.events.dlq.${run}`,
    };
    const consumerGroup = `core-gateway-ingest-${run}`;
    try {
      const gateway = await startTestGateway({
        KAFKA_BROKERS: infra.brokers.join(','),
        ...(infra.clickhouseUrl === undefined ? {} : { CLICKHOUSE_URL: infra.clickhouseUrl, CLICKHOUSE_DATABASE: `test_${run}` }),
        EVENTS_TOPICS: topics.events,
        ENROLLMENT_COMMANDS_TOPIC: topics.enrollments,
        EDGE_POLICY_COMMANDS_TOPIC: topics.edgePolicies,
        EVENTS_DLQ_TOPIC: topics.deadLetter,
        KAFKA_CONSUMER_GROUP: consumerGroup,
        KAFKA_TOPIC_PARTITIONS: '3',
        COMMAND_TIMEOUT_MS: '3000',
        INGEST_BATCH_WAIT_MS: '50',
      });
      const kafka = new Kafka({ clientId: `test-${run}`, brokers: infra.brokers, logLevel: logLevel.NOTHING });
      suite = { infra, gateway, kafka, topics, consumerGroup };
    } catch (error) {
      await infra.stop();
      throw error;
    }
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(120_000);
    await Promise.all([...openReaders].map((consumer) => consumer.disconnect()));
    if (suite === undefined) return;
    try {
      await suite.gateway.close();
    } finally {
      await suite.infra.stop();
    }
  },
};
