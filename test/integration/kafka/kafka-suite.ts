import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { pickInfra, startInfra, type TestInfra } from '../../support/infra.js';
import { received, type ReceivedMessage } from '../../support/kafka-topics.js';
import { storeEnvironment, storesUnderTest, type StoreKind } from '../../support/stores.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { commandTopicEnvironment, commandTopicNames, type CommandTopicNames } from '../../support/command-topics.js';

export interface Topics {
  readonly events: string;
  /** Each catalogue entry's command topic. */
  readonly commands: CommandTopicNames;
  readonly deadLetter: string;
}

/** What a test on one store gets: its own gateway, topics and ingest group, on the shared broker. */
export interface KafkaSuite {
  readonly store: StoreKind;
  readonly infra: TestInfra;
  readonly gateway: TestGateway;
  /** A plain kafkajs client, standing for the other services that read and write the topics. */
  readonly kafka: Kafka;
  readonly topics: Topics;
  readonly consumerGroup: string;
}

let shared: { readonly infra: TestInfra; readonly kafka: Kafka } | undefined;
const suites = new Map<StoreKind, KafkaSuite>();
/** Readers still connected; the root hook stops them, so a failed test leaves no client reconnecting to a stopped broker. */
const openReaders = new Set<Consumer>();

/** The broker and a plain client, for tests that need no gateway. */
export function sharedKafka(): { readonly infra: TestInfra; readonly kafka: Kafka } {
  if (shared === undefined) throw new Error('the Kafka suite is not running: load kafka-suite.ts with --require');
  return shared;
}

/** The Kafka-mode gateway on `store` and its topics, started by the root hook. */
export function kafkaSuite(store: StoreKind): KafkaSuite {
  const suite = suites.get(store);
  if (suite === undefined) throw new Error(`the Kafka suite has no gateway on ${store}: check TEST_STORES`);
  return suite;
}

/** Declares a suite once per store under test (TEST_STORES), with the store's name in its title. */
export function describeOnEachStore(title: string, body: (this: Mocha.Suite, suite: () => KafkaSuite, store: StoreKind) => void): void {
  for (const store of storesUnderTest()) {
    describe(`${title} [${store}]`, function () {
      body.call(this, () => kafkaSuite(store), store);
    });
  }
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
  const consumer: Consumer = sharedKafka().kafka.consumer({ groupId: `reader-${randomBytes(6).toString('hex')}`, readUncommitted: false, maxWaitTimeInMs: 100 });
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

async function startSuite(store: StoreKind, infra: TestInfra): Promise<KafkaSuite> {
  const run = randomBytes(4).toString('hex');
  const topics: Topics = {
    events: `platform.events.${run}`,
    commands: commandTopicNames((name) => `${name}.${run}`),
    deadLetter: `platform.events.dlq.${run}`,
  };
  const consumerGroup = `core-gateway-ingest-${run}`;
  const gateway = await startTestGateway({
    KAFKA_BROKERS: infra.brokers.join(','),
    ...storeEnvironment(store, infra.clickhouse?.url),
    EVENTS_TOPICS: topics.events,
    ...commandTopicEnvironment(topics.commands),
    EVENTS_DLQ_TOPIC: topics.deadLetter,
    KAFKA_CONSUMER_GROUP: consumerGroup,
    KAFKA_TOPIC_PARTITIONS: '3',
    COMMAND_TIMEOUT_MS: '3000',
    INGEST_BATCH_WAIT_MS: '50',
  });
  return { store, infra, gateway, kafka: sharedKafka().kafka, topics, consumerGroup };
}

/** Root hooks, loaded with --require: one broker (and ClickHouse server) for the run, one gateway per store. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(300_000);
    const kind = await pickInfra();
    const stores = storesUnderTest();
    console.log(`      Kafka suite infrastructure: ${kind}; stores: ${stores.join(', ')}`);
    const infra = await startInfra(kind, { withClickHouse: stores.includes('clickhouse-server') });
    shared = { infra, kafka: new Kafka({ clientId: `test-${randomBytes(4).toString('hex')}`, brokers: infra.brokers, logLevel: logLevel.NOTHING }) };
    for (const store of stores) suites.set(store, await startSuite(store, infra));
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(120_000);
    await Promise.all([...openReaders].map((consumer) => consumer.disconnect()));
    try {
      for (const suite of suites.values()) await suite.gateway.close();
    } finally {
      await shared?.infra.stop();
    }
  },
};
