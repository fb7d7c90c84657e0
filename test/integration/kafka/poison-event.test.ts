import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { REJECT_REASONS } from '../../../src/ingest/event-ingestor.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { eventSeries } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { committedOffsets, committedToEnd, readToEnd, type ReceivedMessage } from '../../support/kafka-topics.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import type { Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from './feed-helpers.js';
import { describeOnEachStore, topicReader, type KafkaSuite } from './kafka-suite.js';

/**
 * An event that passes validation but that the real store refuses: a CHECK constraint on
 * the suite's events table refuses one entity value, unique to this run. The constraint
 * is added through a second connection to the suite gateway's own store and dropped after.
 */
describeOnEachStore('an event the store refuses', function (suite, store) {
  this.timeout(120_000);
  const marker = `poison-${randomBytes(6).toString('hex')}`;
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore(suite().gateway.config);
    // DDL binds no parameters; the marker is [a-z0-9-] only.
    await sql.command(`ALTER TABLE events ADD CONSTRAINT poison_test CHECK entity != '${marker}'`);
  });

  after(async () => {
    await sql.command('ALTER TABLE events DROP CONSTRAINT IF EXISTS poison_test');
    await sql.close();
  });

  /** `count` events one second apart on one partition (one key), the one at `poisonAt` carrying the refused entity. */
  function batchWithPoison(tenant: Tenant, count: number, poisonAt: number, start: number): { events: CanonicalEvent[]; poison: CanonicalEvent } {
    const events = eventSeries(count, { org_id: tenant.orgId, project_id: tenant.projectId }, start);
    const poison = { ...events[poisonAt]!, entity: marker };
    events[poisonAt] = poison;
    return { events, poison };
  }

  async function produce(s: KafkaSuite, key: string, events: readonly CanonicalEvent[]): Promise<{ partition: number; baseOffset: bigint }> {
    const producer = s.kafka.producer();
    await producer.connect();
    try {
      const [sent] = await producer.send({ topic: s.topics.events, acks: -1, messages: events.map((e) => ({ key, value: JSON.stringify(e) })) });
      return { partition: sent!.partition, baseOffset: BigInt(sent!.baseOffset!) };
    } finally {
      await producer.disconnect();
    }
  }

  const metricTotal = async (s: KafkaSuite, name: string, labels: Record<string, string> = {}): Promise<number> => {
    const text = (await request('GET', new URL('/metrics', s.gateway.baseUrl).toString())).text;
    return samplesOf(parseMetrics(text), name, labels).reduce((n, sample) => n + sample.value, 0);
  };
  const storeRejectedCount = (s: KafkaSuite) => metricTotal(s, 'ingest_dead_lettered_total', { reason: 'store-rejected' });
  /** Tries of a batch by the consumer, failed or not: one observation of the batch size each. */
  const batchesTried = (s: KafkaSuite) => metricTotal(s, 'ingest_batch_size_count');

  const feedIds = async (s: KafkaSuite, tenant: Tenant) => new Set((await wholeFeed(s.gateway, tenant)).map((e) => e.id));

  /** The dead letters of this key now on the DLQ, read to its end. */
  const deadLettersOf = async (s: KafkaSuite, key: string): Promise<ReceivedMessage[]> =>
    (await readToEnd(s.kafka, [s.topics.deadLetter])).filter((m) => m.key === key);

  function expectStoreRejected(dead: ReceivedMessage, poison: CanonicalEvent, source: { topic: string; partition: number; offset: bigint }): void {
    expect(dead.value).to.equal(JSON.stringify(poison));
    expect(dead.headers).to.deep.include({
      'dlq-reason': 'store-rejected',
      'dlq-source-topic': source.topic,
      'dlq-source-partition': String(source.partition),
      'dlq-source-offset': String(source.offset),
    });
    // The store's own words: which constraint, on which value; no statement text.
    const detail = dead.headers['dlq-detail']!;
    expect(detail).to.match(/^VIOLATED_CONSTRAINT \(469\): Constraint `poison_test` for table \S+ .*is violated/);
    expect(detail).to.include(marker);
    expect(detail).not.to.match(/INSERT|While executing|DB::Exception/);
  }

  it('reports the dead-letter count of every reason, store-rejected among them, before any occurs', async () => {
    const text = (await request('GET', new URL('/metrics', suite().gateway.baseUrl).toString())).text;
    const reasons = samplesOf(parseMetrics(text), 'ingest_dead_lettered_total').map((sample) => sample.labels['reason']);
    expect(reasons).to.include.members([...REJECT_REASONS]);
  });

  it('dead-letters the refused event alone, stores its 199 neighbours, commits past it and goes on', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = tenant.projectId;
    const { events, poison } = batchWithPoison(tenant, 200, 100, Date.parse('2026-02-01T00:00:00Z'));
    const countedBefore = await storeRejectedCount(s);
    const dlq = await topicReader([s.topics.deadLetter]);
    let sent: { partition: number; baseOffset: bigint };
    try {
      sent = await produce(s, key, events);
      const [dead] = await dlq.waitFor('the refused event on the DLQ', (m) => m.key === key, 1, 60_000);
      expectStoreRejected(dead!, poison, { topic: s.topics.events, partition: sent.partition, offset: sent.baseOffset + 100n });
    } finally {
      await dlq.stop();
    }
    await waitFor('the dead letter counted by its reason', async () => ((await storeRejectedCount(s)) === countedBefore + 1 ? true : undefined));

    const neighbours = new Set(events.filter((e) => e !== poison).map((e) => e.id));
    await waitFor('the 199 neighbours in the feed', async () => ((await feedIds(s, tenant)).size >= 199 ? true : undefined), 30_000, 200);
    expect(await feedIds(s, tenant)).to.deep.equal(neighbours);
    await waitFor('the partition committed to its end', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 30_000, 200);

    // The partition moves on: what comes after the poison is stored too.
    const later = eventSeries(10, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-02-02T00:00:00Z'));
    await produce(s, key, later);
    for (const e of later) neighbours.add(e.id);
    await waitFor('the later events in the feed', async () => ((await feedIds(s, tenant)).size >= 209 ? true : undefined), 30_000, 200);
    expect(await feedIds(s, tenant)).to.deep.equal(neighbours);
    await waitFor('the partition committed to its end again', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 30_000, 200);
    expect(await deadLettersOf(s, key), 'the refused event dead-lettered once').to.have.length(1);
  });

  /**
   * The store falls sick before the batch arrives: the ClickHouse server stalls (SIGSTOP,
   * so every insert times out), or chDB loses the events table (DETACH: every insert fails
   * with UNKNOWN_TABLE). Neither is a verdict on the rows.
   */
  async function makeSick(s: KafkaSuite): Promise<() => Promise<void>> {
    const server = s.infra.clickhouse?.server;
    if (store === 'clickhouse-server' && server !== undefined) {
      await server.freeze();
      return () => server.thaw();
    }
    await sql.command('DETACH TABLE events');
    return () => sql.command('ATTACH TABLE events');
  }


  it('dead-letters nothing and commits nothing while the store is sick, then stores the batch and dead-letters only the refused event', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = tenant.projectId;
    const { events, poison } = batchWithPoison(tenant, 50, 20, Date.parse('2026-03-01T00:00:00Z'));
    await waitFor('earlier tests ingested', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 30_000, 200);
    const triedBefore = await batchesTried(s);

    const recover = await makeSick(s);
    let sick = true;
    let sent: { partition: number; baseOffset: bigint };
    try {
      sent = await produce(s, key, events);
      // Three tries of the batch: the first insert and two retries, all failed.
      await waitFor('the consumer retrying the batch', async () => ((await batchesTried(s)) >= triedBefore + 3 ? true : undefined), 60_000, 100);
      const committed = (await committedOffsets(s.kafka, s.consumerGroup, s.topics.events)).get(sent.partition) ?? -1n;
      expect(committed <= sent.baseOffset, `committed offset ${committed} passed the batch at ${sent.baseOffset} while the store was sick`).to.equal(true);
      expect(await deadLettersOf(s, key), 'dead letters while the store was sick').to.deep.equal([]);
      await recover();
      sick = false;
    } finally {
      if (sick) await recover();
    }

    await waitFor('the partition committed to its end after recovery', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 60_000, 200);
    expect(await feedIds(s, tenant)).to.deep.equal(new Set(events.filter((e) => e !== poison).map((e) => e.id)));
    const dead = await deadLettersOf(s, key);
    expect(dead, 'only the refused event, once').to.have.length(1);
    expectStoreRejected(dead[0]!, poison, { topic: s.topics.events, partition: sent.partition, offset: sent.baseOffset + 20n });
  });
});
