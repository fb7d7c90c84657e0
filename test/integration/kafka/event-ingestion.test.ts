import { expect } from 'chai';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { canonicalEvent, eventSeries } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { feedSettlesAt } from './feed-helpers.js';
import { describeOnEachStore, topicReader } from './kafka-suite.js';

describeOnEachStore('events from other services into the feed', function (suite) {
  this.timeout(60_000);

  it('shows an event another service published, once, with every field', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const event = canonicalEvent({
      org_id: tenant.orgId,
      project_id: tenant.projectId,
      occurred_at: '2026-03-04T05:06:07.123456+02:00',
      correlation_id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc',
      payload: { level: 3, tags: ['a', 'b'], nested: { ok: true } },
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      span_id: 'b7ad6b7169203331',
    });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.events, acks: -1, messages: [{ key: event.device_id!, value: JSON.stringify(event) }] });
    await producer.disconnect();

    const [item] = await feedSettlesAt(gateway, tenant, 1);
    expect(item).to.deep.equal({ ...event, occurred_at: '2026-03-04T03:06:07.123456Z' });
  });

  it('sends poison messages to the DLQ with their reason and source, and stores the valid events behind them', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const base = { org_id: tenant.orgId, project_id: tenant.projectId };
    const dlq = await topicReader([topics.deadLetter]);
    const producer = kafka.producer();
    await producer.connect();
    const { id: _omitted, ...withoutId } = canonicalEvent(base);
    const good = eventSeries(3, base);
    const marker = tenant.projectId;
    // One partition (same key), so the valid events sit behind the poison ones.
    const sent = await producer.send({
      topic: topics.events,
      acks: -1,
      messages: [
        { key: marker, value: `not json ${marker}`, headers: { origin: 'sensor-7' } },
        { key: marker, value: JSON.stringify({ ...withoutId, note: marker }) },
        { key: marker, value: JSON.stringify(good[0]) },
        { key: marker, value: JSON.stringify({ ...canonicalEvent(base), occurred_at: '1800-01-01T00:00:00Z' }) },
        { key: marker, value: JSON.stringify(good[1]) },
        { key: marker, value: JSON.stringify(good[2]) },
      ],
    });
    await producer.disconnect();
    const { partition, baseOffset } = sent[0]!;

    const dead = await dlq.waitFor('three dead letters', (m) => m.key === marker, 3);
    await dlq.stop();
    expect(dead.map((m) => m.headers['dlq-reason'])).to.deep.equal(['invalid-json', 'schema-violation', 'timestamp-out-of-range']);
    expect(dead[0]!.value).to.equal(`not json ${marker}`);
    expect(dead[0]!.headers).to.deep.include({
      origin: 'sensor-7',
      'dlq-source-topic': topics.events,
      'dlq-source-partition': String(partition),
      'dlq-source-offset': baseOffset,
    });
    expect(dead[1]!.headers['dlq-detail']).to.match(/id is required/);
    expect(dead[1]!.headers['dlq-source-offset']).to.equal(String(BigInt(baseOffset!) + 1n));

    const items = await feedSettlesAt(gateway, tenant, 3);
    expect(items.map((e) => e.id).sort()).to.deep.equal(good.map((e) => e.id).sort());
  });

  it('ingests a burst from many devices across partitions', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const events = eventSeries(1500, { org_id: tenant.orgId, project_id: tenant.projectId }).map((e, i) => ({ ...e, device_id: `00000000-0000-4000-8000-${String(i % 40).padStart(12, '0')}` }));
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.events, acks: -1, messages: events.map((e) => ({ key: e.device_id, value: JSON.stringify(e) })) });
    await producer.disconnect();
    const seen = new Set<string>();
    let cursor: string | null = null;
    await waitFor('1500 events in the feed', async () => {
      seen.clear();
      cursor = null;
      do {
        const q: string = `?limit=200${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
        const res = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${q}`, { headers: await tenant.headers() });
        for (const e of res.body.data.items) seen.add(e.id);
        cursor = res.body.meta.next_cursor;
      } while (cursor !== null);
      return seen.size === 1500 ? true : undefined;
    }, 40_000, 250);
    expect([...seen].sort()).to.deep.equal(events.map((e) => e.id).sort());
  });
});
