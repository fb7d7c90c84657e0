import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { deadLetterMessage } from '../../../src/ingest/dead-letter.js';
import { defaultTransactionalIdPrefix, transactionalId } from '../../../src/ingest/dead-letter-writer.js';
import type { IngestConsumer } from '../../../src/ingest/kafka-ingest-consumer.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { createLogger } from '../../../src/observability/logger.js';
import { canonicalEvent } from '../../support/factories.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { committedOffsets, committedToEnd, readToEnd, sendContinuously, topicEnds } from '../../support/kafka-topics.js';
import { storeEnvironment } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { consumerProcessSetup } from './ingest-group.js';
import { describeOnEachStore, type KafkaSuite } from './kafka-suite.js';
import { feedIds, ownConsumerHooks, ownIngestConsumer, ownTopic, type OwnTopic } from './own-ingest-consumer.js';

/** A message no consumer can store: its key names it, so each of its letters can be counted. */
const poison = (name: string) => ({ key: name, value: '{not json' });

/** Sends messages to one partition, acknowledged by every in-sync replica. */
async function send(kafka: Kafka, topic: string, partition: number, messages: readonly { key: string; value: string }[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: messages.map((m) => ({ ...m, partition })) });
  } finally {
    await producer.disconnect();
  }
}

/**
 * The letters on the dead-letter topic by key, as `readUncommitted` reads them. A plain record
 * written after everything else is read last; reaching it means every committed letter before
 * it was read (a read_committed reader stops at the first open transaction, so it also proves
 * none is left open).
 */
async function lettersByKey(kafka: Kafka, topic: string, readUncommitted: boolean): Promise<Map<string, number>> {
  const sentinel = `sentinel-${randomUUID()}`;
  await send(kafka, topic, 0, [{ key: sentinel, value: 'end' }]);
  const counts = new Map<string, number>();
  let seen = false;
  const reader = kafka.consumer({ groupId: `dlq-reader-${randomUUID()}`, readUncommitted, maxWaitTimeInMs: 100 });
  await reader.connect();
  try {
    await reader.subscribe({ topics: [topic], fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString() ?? '';
        if (key === sentinel) seen = true;
        // Sentinels of earlier reads are not letters.
        else if (!key.startsWith('sentinel-')) counts.set(key, (counts.get(key) ?? 0) + 1);
      },
    });
    await waitFor(`the dead-letter topic read to its end (${readUncommitted ? 'read_uncommitted' : 'read_committed'})`, async () => (seen ? true : undefined), 60_000, 100);
    return counts;
  } finally {
    await reader.disconnect();
  }
}

/** Every partition of the topic committed to its end by the group: no transaction of its consumers is left to come. */
const caughtUp = (s: KafkaSuite, own: OwnTopic) => waitFor(`${own.groupId} committed to the end of ${own.topic}`, () => committedToEnd(s.kafka, own.groupId, own.topic), 60_000, 100);

/** The sum of a group's committed offsets over a topic's partitions: how far it has got. */
const committedTotal = async (kafka: Kafka, groupId: string, topic: string): Promise<bigint> =>
  [...(await committedOffsets(kafka, groupId, topic)).values()].reduce((sum, offset) => sum + (offset > 0n ? offset : 0n), 0n);

/** Poison, with a valid event now and then, sent without pause to every partition until stop(); `produced` holds the poison's acknowledged keys. */
async function streamPoison(kafka: Kafka, topic: string, base: { org_id: string; project_id: string }) {
  const producer = kafka.producer();
  await producer.connect();
  const stream = sendContinuously('the poison producer', async (round) => {
    const batch = Array.from({ length: 6 }, (_, i) => poison(`killed-${round}-${i}`));
    const event = canonicalEvent(base);
    // Keyed, so the letters spread over the partitions as a producer's keys do.
    await producer.send({ topic, acks: -1, messages: [...batch, { key: event.device_id!, value: JSON.stringify(event) }] });
    return batch.map((m) => m.key);
  });
  return {
    produced: stream.produced,
    check: () => stream.check(),
    async stop() {
      try {
        await stream.stop();
      } finally {
        await producer.disconnect();
      }
    },
  };
}

describeOnEachStore('dead letters written once', function (suite, store) {
  this.timeout(180_000);
  const { transport, started } = ownConsumerHooks(suite);
  const processes: GatewayProcess[] = [];
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.dispose()));
  });

  it('an ingest consumer process SIGKILLed three times while poison streams in: each letter once for read_committed readers', async () => {
    const s = suite();
    const { env: setupEnv, topic, groupId } = consumerProcessSetup(s.infra, 'dlq-kill', { KAFKA_TOPIC_PARTITIONS: '3', KAFKA_SESSION_TIMEOUT_MS: '6000' });
    // The process's own store: a chDB directory of its own (which serves only ROLE=all, the
    // consumer in the gateway's process), or a database of its own on the server.
    const env: Record<string, string> = {
      ...Object.fromEntries(Object.entries(setupEnv).filter(([k]) => !k.startsWith('CLICKHOUSE_') && k !== 'CURSOR_SECRET')),
      ...storeEnvironment(store, s.infra.clickhouse?.url),
      ROLE: store === 'chdb' ? 'all' : 'consumer',
    };
    const deadLetterTopic = env['EVENTS_DLQ_TOPIC']!;
    const tenant = s.gateway.tenant();
    let consumer = await startGatewayProcess(env);
    processes.push(consumer);
    const stream = await streamPoison(s.kafka, topic, { org_id: tenant.orgId, project_id: tenant.projectId });
    try {
      let reached = 0n;
      for (let kill = 1; kill <= 3; kill += 1) {
        // Killed once it has committed past where the last one was killed: its transactions are
        // going out all the while, so a kill lands before, inside or after one.
        await waitFor(`the group past ${reached} before kill ${kill}`, async () => {
          stream.check();
          const total = await committedTotal(s.kafka, groupId, topic);
          return total > reached ? total : undefined;
        }, 60_000, 50);
        consumer.signal('SIGKILL');
        expect(await consumer.exited).to.deep.equal({ code: null, signal: 'SIGKILL' });
        reached = await committedTotal(s.kafka, groupId, topic);
        consumer = await startGatewayProcess(env);
        processes.push(consumer);
      }
    } finally {
      await stream.stop();
    }
    await waitFor(`${groupId} committed to the end of ${topic}`, () => committedToEnd(s.kafka, groupId, topic), 90_000, 100);
    // Every partition of the dead-letter topic, read as committed data to its end: a transaction
    // the kills left open would hold the read back, and fail it.
    const committed = new Map<string, number>();
    for (const { key } of await readToEnd(s.kafka, [deadLetterTopic])) committed.set(key ?? '', (committed.get(key ?? '') ?? 0) + 1);
    expect(committed.size, 'letters of every poison message').to.equal(stream.produced.length);
    const twice = [...committed].filter(([, count]) => count !== 1);
    expect(twice, 'letters written more than once').to.deep.equal([]);
    expect([...committed.keys()].sort()).to.deep.equal([...stream.produced].sort());
  });

  it('a consumer that died between its dead-letter send and its commit: each letter once for read_committed readers', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const own = await ownTopic(s, 'dead-letter-once-crash', 1);
    const valid = [canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }), canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId })];
    const bad = ['crash-a', 'crash-b', 'crash-c'].map(poison);
    await send(s.kafka, own.topic, 0, [bad[0]!, ...valid.map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })), bad[1]!, bad[2]!]);
    const end = (await topicEnds(s.kafka, own.topic)).get(0)!;

    // What a consumer killed inside the window leaves on the broker: its transaction holds the
    // batch's letters and offset, sent and never committed. It is the consumer's own
    // transactional id, so the next owner of the partition takes it over.
    const id = transactionalId(defaultTransactionalIdPrefix(own.groupId), own.topic, 0);
    const dead = s.kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1 });
    await dead.connect();
    const transaction = await dead.transaction();
    await transaction.send({
      topic: own.deadLetterTopic,
      acks: -1,
      messages: bad.map((m, offset) => deadLetterMessage({ message: { key: m.key, value: Buffer.from(m.value), source: { topic: own.topic, partition: 0, offset: String(offset) } }, reason: 'invalid-json', detail: 'killed before its commit' })),
    });
    await transaction.sendOffsets({ consumerGroupId: own.groupId, topics: [{ topic: own.topic, partitions: [{ partition: 0, offset: end.toString() }] }] });
    await dead.disconnect();

    await started(ownIngestConsumer(s, own, transport(), createGatewayMetrics(), createLogger('silent'))).start();
    await caughtUp(s, own);
    await waitFor('the valid events in the feed', async () => {
      const ids = await feedIds(s, tenant);
      return valid.every((e) => ids.includes(e.id)) ? true : undefined;
    }, 30_000, 100);

    const committed = await lettersByKey(s.kafka, own.deadLetterTopic, false);
    expect(Object.fromEntries(committed)).to.deep.equal(Object.fromEntries(bad.map((m) => [m.key, 1])));
    // The dead consumer's copies are still in the log, aborted: read_uncommitted readers see them.
    const everything = await lettersByKey(s.kafka, own.deadLetterTopic, true);
    expect(Object.fromEntries(everything)).to.deep.equal(Object.fromEntries(bad.map((m) => [m.key, 2])));
  });

  it('a second member joining while letters stream: each letter once for read_committed readers', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const own = await ownTopic(s, 'dead-letter-once-rebalance', 4);
    const first = started(ownIngestConsumer(s, own, transport(), createGatewayMetrics(), createLogger('silent')));
    await first.start();
    let second: IngestConsumer | undefined;
    const names: string[] = [];
    const round = async (r: number) => {
      for (let partition = 0; partition < 4; partition += 1) {
        const batch = Array.from({ length: 5 }, (_, i) => poison(`rebalance-${r}-${partition}-${i}`));
        const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
        names.push(...batch.map((m) => m.key));
        await send(s.kafka, own.topic, partition, [...batch.slice(0, 2), { key: event.device_id!, value: JSON.stringify(event) }, ...batch.slice(2)]);
      }
    };
    try {
      await round(0);
      // Letters are going out when the second member joins: the group hands it half the partitions mid-stream.
      await waitFor('the first letters on the dead-letter topic', async () => (((await topicEnds(s.kafka, own.deadLetterTopic)).get(0) ?? 0n) > 0n ? true : undefined), 30_000, 50);
      second = ownIngestConsumer(s, own, transport(), createGatewayMetrics(), createLogger('silent'));
      const joining = second.start();
      for (let r = 1; r <= 6; r += 1) await round(r);
      await joining;
      for (let r = 7; r <= 9; r += 1) await round(r);
      await caughtUp(s, own);
      const committed = await lettersByKey(s.kafka, own.deadLetterTopic, false);
      expect(Object.fromEntries(committed)).to.deep.equal(Object.fromEntries(names.map((n) => [n, 1])));
    } finally {
      await second?.stop();
    }
  });
});
