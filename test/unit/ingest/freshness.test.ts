import { expect } from 'chai';
import { ageSeconds, batchTimestamps, createFreshness, UnreadTracker } from '../../../src/ingest/freshness.js';
import { createEventIngestor, type RawEventMessage } from '../../../src/ingest/event-ingestor.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import type { EventStore } from '../../../src/store/event-store.js';
import { toStoreError } from '../../../src/store/store-errors.js';
import { ClickHouseError } from '@clickhouse/client';
import { canonicalEvent } from '../../support/factories.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const stamped = (...ms: number[]) => ms.map((t) => ({ timestamp: String(t) }));

/** A histogram's series carry their suffixed name (`_bucket`, `_count`); a gauge's are named by the metric. */
const seriesName = (v: object, metricName: string): string => ('metricName' in v && typeof v.metricName === 'string' ? v.metricName : metricName);

async function value(metrics: ReturnType<typeof createGatewayMetrics>, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  // A histogram's series are named by suffix under the histogram's own name.
  const base = name.replace(/_(count|sum)$/, '');
  const metric = await metrics.registry.getSingleMetric(base)?.get();
  const series = metric?.values.filter((v) => seriesName(v, metric.name) === (name === base && String(metric.type) === 'histogram' ? `${base}_bucket` : name));
  const found = series?.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return found?.value;
}

describe('freshness: ages', () => {
  it('measures seconds from a timestamp to the acknowledgement, never below zero', () => {
    expect(ageSeconds(T0, T0 + 1500)).to.equal(1.5);
    expect(ageSeconds(T0 + 2000, T0), 'a producer clock ahead of ours').to.equal(0);
    expect(ageSeconds(Number.NaN, T0)).to.equal(undefined);
  });

  it("takes a batch's oldest timestamp wherever it is, and its last message's", () => {
    expect(batchTimestamps(stamped(T0 + 5, T0 + 1, T0 + 9))).to.deep.equal({ oldestMs: T0 + 1, lastMs: T0 + 9 });
    expect(batchTimestamps([{ timestamp: 'x' }, { timestamp: String(T0) }, { timestamp: 'y' }])).to.deep.equal({ oldestMs: T0, lastMs: T0 });
  });

  it('puts an event into each histogram by its own age: a days-old occurred_at does not move the Kafka one', async () => {
    const metrics = createGatewayMetrics();
    const freshness = createFreshness(metrics);
    const occurred = new Date(T0 - 3 * 86_400_000).toISOString();
    freshness.visible({ value: '{}', timestamp: String(T0 - 200) }, { id: 'e', org_id: 'o', project_id: 'p', occurred_at: occurred, domain: 'd', entity: 'x', action: 'a' }, T0);
    expect(await value(metrics, 'ingest_visible_age_from_kafka_timestamp_seconds', { le: '0.1' })).to.equal(0);
    expect(await value(metrics, 'ingest_visible_age_from_kafka_timestamp_seconds', { le: '0.25' })).to.equal(1);
    expect(await value(metrics, 'ingest_visible_age_from_occurred_at_seconds', { le: '86400' })).to.equal(0);
    expect(await value(metrics, 'ingest_visible_age_from_occurred_at_seconds', { le: '604800' })).to.equal(1);
  });

  it('observes no Kafka age for an event that did not come from Kafka', async () => {
    const metrics = createGatewayMetrics();
    createFreshness(metrics).visible({ value: '{}' }, { id: 'e', org_id: 'o', project_id: 'p', occurred_at: new Date(T0).toISOString(), domain: 'd', entity: 'x', action: 'a' }, T0 + 50);
    expect((await value(metrics, 'ingest_visible_age_from_kafka_timestamp_seconds_count')) ?? 0).to.equal(0);
    expect(await value(metrics, 'ingest_visible_age_from_occurred_at_seconds_count')).to.equal(1);
  });
});

describe('freshness: the oldest unread message', () => {
  it('is the oldest pending batch, until the store acknowledges it', () => {
    const unread = new UnreadTracker();
    const first = unread.fetched('t/0', { oldestMs: T0, lastMs: T0 + 10, behind: 5 });
    const second = unread.fetched('t/0', { oldestMs: T0 + 20, lastMs: T0 + 30, behind: 0 });
    expect(unread.oldestUnreadMs('t/0', T0 + 1000)).to.equal(T0);
    second();
    expect(unread.oldestUnreadMs('t/0', T0 + 1000), 'acknowledged out of order: the older batch still waits').to.equal(T0);
    first();
    expect(unread.oldestUnreadMs('t/0', T0 + 1000), 'the last fetch reached the end: caught up').to.equal(T0 + 1000);
  });

  it('stands in the last fetched message for the next one when the fetch stopped short of the partition end', () => {
    const unread = new UnreadTracker();
    unread.fetched('t/0', { oldestMs: T0, lastMs: T0 + 40, behind: 100 })();
    expect(unread.oldestUnreadMs('t/0', T0 + 1000)).to.equal(T0 + 40);
  });

  it('is unknown for a partition never fetched, and forgotten when the partition goes', () => {
    const unread = new UnreadTracker();
    expect(unread.oldestUnreadMs('t/1', T0)).to.equal(undefined);
    unread.fetched('t/1', { oldestMs: T0, lastMs: T0, behind: 0 });
    unread.assigned(new Set(['t/0']));
    expect(unread.oldestUnreadMs('t/1', T0)).to.equal(undefined);
  });

  it("keeps a held partition's pending oldest across a rebalance: those messages are delivered again", () => {
    const unread = new UnreadTracker();
    unread.fetched('t/0', { oldestMs: T0, lastMs: T0 + 10, behind: 0 });
    unread.assigned(new Set(['t/0']));
    expect(unread.oldestUnreadMs('t/0', T0 + 5000)).to.equal(T0);
    unread.fetched('t/0', { oldestMs: T0, lastMs: T0 + 10, behind: 0 })();
    expect(unread.oldestUnreadMs('t/0', T0 + 5000)).to.equal(T0 + 5000);
  });

  it('reports the lag in seconds and a timestamp that stays put while the partition waits', async () => {
    const metrics = createGatewayMetrics();
    const freshness = createFreshness(metrics);
    const stored = freshness.fetched('t', 0, stamped(T0, T0 + 100), 0);
    freshness.report(T0 + 3000);
    expect(await value(metrics, 'kafka_consumer_lag_seconds', { topic: 't', partition: '0' })).to.equal(3);
    expect(await value(metrics, 'ingest_oldest_unread_timestamp_seconds', { topic: 't', partition: '0' })).to.equal(T0 / 1000);
    freshness.report(T0 + 9000);
    expect(await value(metrics, 'ingest_oldest_unread_timestamp_seconds', { topic: 't', partition: '0' })).to.equal(T0 / 1000);
    stored();
    freshness.report(T0 + 10_000);
    expect(await value(metrics, 'kafka_consumer_lag_seconds', { topic: 't', partition: '0' }), 'caught up').to.equal(0);
    expect(await value(metrics, 'ingest_oldest_unread_timestamp_seconds', { topic: 't', partition: '0' })).to.equal((T0 + 10_000) / 1000);
    freshness.assigned(new Set());
    expect(await value(metrics, 'kafka_consumer_lag_seconds', { topic: 't', partition: '0' }), 'a partition no longer held has no series').to.equal(undefined);
  });
});

describe('freshness: what the ingestor calls visible', () => {
  /** Writes everything but an event of entity 'poison', which it refuses as the server refuses a constraint. */
  const store = {
    async insertEvents(events) {
      if (events.some((e) => e.event.entity === 'poison')) {
        throw toStoreError(new ClickHouseError({ message: 'Constraint `no_poison` is violated', code: '469', type: 'VIOLATED_CONSTRAINT' }), 'insert');
      }
    },
    async probeWrite() {},
  } as Pick<EventStore, 'insertEvents' | 'probeWrite'> as EventStore;

  it('names each stored message once the store acknowledged it, copies included, and no refused or invalid one', async () => {
    const good = canonicalEvent();
    const poison = canonicalEvent({ entity: 'poison' });
    const message = (event: unknown, timestamp: string): RawEventMessage => ({ value: JSON.stringify(event), timestamp });
    const messages = [message(good, '1'), message(poison, '2'), { value: 'not json', timestamp: '3' }, message(good, '4')];
    const seen: { timestamp: string | undefined; occurredAt: string; at: number }[] = [];
    const before = Date.now();
    await createEventIngestor({ store, schemas: createSchemaRegistry() }).ingestMessages(messages, (m, head, at) => seen.push({ timestamp: m.timestamp, occurredAt: head.occurred_at, at }));
    expect(seen.map((s) => s.timestamp)).to.deep.equal(['1', '4']);
    expect(seen.every((s) => s.occurredAt === good.occurred_at && s.at >= before && s.at <= Date.now())).to.equal(true);
  });
});
