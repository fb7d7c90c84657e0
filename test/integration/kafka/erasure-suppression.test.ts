import { expect } from 'chai';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { feedSettlesAt } from './feed-helpers.js';
import { describeOnEachStore } from './kafka-suite.js';

/**
 * A device erased while its events are still on Kafka: what the topic delivers afterwards, a
 * replayed dead letter among it, is dropped by the consumer, neither stored nor
 * dead-lettered, and the events behind it on the same partition are stored.
 */
describeOnEachStore('erasure: events of an erased scope arriving from Kafka afterwards', function (suite) {
  // The gateway's default ERASURE_POLL_MS (5 s): an erasure waits four reads and the store's timeout.
  this.timeout(120_000);

  it('drops them, counted and not dead-lettered, and stores the other events of the partition behind them', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const [erased, kept] = [uuid(), uuid()];
    const base = { org_id: tenant.orgId, project_id: tenant.projectId };
    const before = [...Array.from({ length: 4 }, () => canonicalEvent({ ...base, device_id: erased })), canonicalEvent({ ...base, device_id: kept })];
    const producer = kafka.producer();
    await producer.connect();
    try {
      // One key, one partition: what comes after the erasure is read in order, the kept device's event last.
      const marker = tenant.projectId;
      await producer.send({ topic: topics.events, acks: -1, messages: before.map((e) => ({ key: marker, value: JSON.stringify(e) })) });
      await feedSettlesAt(gateway, tenant, before.length);

      const outcome = await gateway.runtime.erasure.erase({ scope: { orgId: tenant.orgId, projectId: tenant.projectId, deviceId: erased }, requestedBy: 'ops:kafka-test', reason: 'device returned' });
      expect(outcome.record.eventsRemoved).to.equal(4);

      const scrape = async () => {
        const samples = parseMetrics((await request('GET', new URL('/metrics', gateway.runtime.opsUrl ?? gateway.runtime.url).toString())).text);
        return {
          suppressed: samplesOf(samples, 'erasure_suppressed_events_total')[0]?.value ?? 0,
          deadLettered: samplesOf(samples, 'ingest_dead_lettered_total').reduce((sum, s) => sum + s.value, 0),
        };
      };
      const counted = await scrape();
      const late = Array.from({ length: 3 }, () => canonicalEvent({ ...base, device_id: erased }));
      const sentinel = canonicalEvent({ ...base, device_id: kept });
      await producer.send({
        topic: topics.events,
        acks: -1,
        messages: [
          ...late.map((e) => ({ key: marker, value: JSON.stringify(e) })),
          // A letter put back by `npm run dlq -- replay`, as it carries its replay count.
          { key: marker, value: JSON.stringify(before[0]), headers: { 'dlq-replay-count': '1' } },
          { key: marker, value: JSON.stringify(sentinel) },
        ],
      });
      const items = await feedSettlesAt(gateway, tenant, 2);
      expect(items.map((e) => e.id).sort()).to.deep.equal([before[4]!.id, sentinel.id].sort());
      const after = await scrape();
      expect(after.suppressed - counted.suppressed).to.equal(4);
      expect(after.deadLettered).to.equal(counted.deadLettered);
    } finally {
      await producer.disconnect();
    }
  });
});
