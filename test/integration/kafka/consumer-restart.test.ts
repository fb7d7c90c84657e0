import { expect } from 'chai';
import { eventSeries } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { feedSettlesAt } from './feed-helpers.js';
import { committedToEnd } from '../../support/kafka-topics.js';
import { describeOnEachStore, type KafkaSuite } from './kafka-suite.js';
import { groupMembers } from './ingest-group.js';

/** True once the ingest group has committed every partition of the events topic up to its end. */
const groupCaughtUp = ({ kafka, topics, consumerGroup }: KafkaSuite) => committedToEnd(kafka, consumerGroup, topics.events);

describeOnEachStore('ingest consumer restarts', function (suite) {
  this.timeout(120_000);

  it('does not double the feed when a whole topic is delivered again', async () => {
    const { gateway, kafka, topics, consumerGroup } = suite();
    const tenant = gateway.tenant();
    const events = eventSeries(40, { org_id: tenant.orgId, project_id: tenant.projectId });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.events, acks: -1, messages: events.map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })) });
    await producer.disconnect();
    await feedSettlesAt(gateway, tenant, 40);
    await waitFor('offsets committed', () => groupCaughtUp(suite()));

    // While the consumer is down its group is rewound, as if it had died before committing.
    await gateway.restart(async () => {
      // The broker takes the closed consumer's leave in its own time (a rebalance first); offsets can be reset only once the group is empty.
      await waitFor('the ingest group empty', async () => ((await groupMembers(kafka, consumerGroup, topics.events)).state === 'Empty' ? true : undefined), 30_000, 100);
      const admin = kafka.admin();
      await admin.connect();
      await admin.resetOffsets({ groupId: consumerGroup, topic: topics.events, earliest: true });
      await admin.disconnect();
    });
    await waitFor('the rewound topic consumed again', () => groupCaughtUp(suite()), 60_000, 250);
    const items = await feedSettlesAt(gateway, tenant, 40);
    expect(new Set(items.map((e) => e.id))).to.deep.equal(new Set(events.map((e) => e.id)));
  });

  it('resumes where it left off, with events published while it was down', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const base = { org_id: tenant.orgId, project_id: tenant.projectId };
    const before = eventSeries(10, base);
    const during = eventSeries(10, base, Date.parse('2026-02-01T00:00:00Z'));
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.events, acks: -1, messages: before.map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })) });
    await feedSettlesAt(gateway, tenant, 10);
    await waitFor('offsets committed', () => groupCaughtUp(suite()));
    await gateway.restart(async () => {
      await producer.send({ topic: topics.events, acks: -1, messages: during.map((e) => ({ key: e.device_id!, value: JSON.stringify(e) })) });
    });
    await producer.disconnect();
    const items = await feedSettlesAt(gateway, tenant, 20);
    expect(new Set(items.map((e) => e.id))).to.deep.equal(new Set([...before, ...during].map((e) => e.id)));
  });
});
