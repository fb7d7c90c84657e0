import { expect } from 'chai';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { committedOffsets, committedToEnd, produceContinuously, topicEnds } from '../../support/kafka-topics.js';
import { skipUnlessServerStoreTested } from '../../support/stores.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from './feed-helpers.js';
import { kafkaSuite } from './kafka-suite.js';

const feedIds = async (gateway: TestGateway, tenant: Tenant) => (await wholeFeed(gateway, tenant)).map((e) => e.id);

describe('the ClickHouse server SIGKILLed mid-ingest [clickhouse-server]', function () {
  this.timeout(180_000);

  before(function () {
    skipUnlessServerStoreTested(this);
    if (kafkaSuite('clickhouse-server').infra.clickhouse?.server === undefined) {
      console.log('      an external ClickHouse server is not ours to kill: TEST_INFRA=external skips this by choice');
      this.skip();
    }
  });

  it('commits no offset past what was stored while the server is down, and stores every event once after its restart', async () => {
    const { gateway, kafka, topics, consumerGroup, infra } = kafkaSuite('clickhouse-server');
    const server = infra.clickhouse!.server!;
    const tenant = gateway.tenant();
    const producer = kafka.producer();
    await producer.connect();
    const events = produceContinuously(producer, topics.events, { org_id: tenant.orgId, project_id: tenant.projectId });
    const producedAtLeast = (count: number) => async () => {
      events.check();
      return events.produced.length >= count ? true : undefined;
    };
    let serverDown = false;
    try {
      await waitFor('the consumer storing the stream', async () => {
        events.check();
        return (await feedIds(gateway, tenant)).length >= 100 ? true : undefined;
      }, 30_000);
      await server.takeDown();
      serverDown = true;
      // Nothing produced from here on can be stored until the server is back, so no
      // partition's committed offset may pass its end as it is now.
      const endsAtKill = await topicEnds(kafka, topics.events);
      const target = events.produced.length + 200;
      await waitFor('events produced while the server is down, with no offset committed past the kill', async () => {
        for (const [partition, committed] of await committedOffsets(kafka, consumerGroup, topics.events)) {
          expect(Number(committed), `partition ${partition}'s committed offset`).to.be.at.most(Number(endsAtKill.get(partition)!));
        }
        return producedAtLeast(target)();
      }, 60_000, 100);
      await server.bringBack();
      serverDown = false;
      await waitFor('events produced after the restart', producedAtLeast(events.produced.length + 200));
    } finally {
      if (serverDown) await server.bringBack();
      await events.stop().finally(() => producer.disconnect());
    }

    await waitFor('the consumer past every event', () => committedToEnd(kafka, consumerGroup, topics.events), 90_000, 250);
    const ids = await feedIds(gateway, tenant);
    expect(ids.length - new Set(ids).size, 'events shown twice').to.equal(0);
    expect(new Set(ids)).to.deep.equal(new Set(events.produced));
    const sql = await openStore(gateway.config);
    try {
      const [row] = await sql.query<{ rows: string; ids: string }>(
        'SELECT count() AS rows, uniqExact(id) AS ids FROM events FINAL WHERE org_id = {org:UUID} AND project_id = {project:UUID}',
        { org: tenant.orgId, project: tenant.projectId },
      );
      expect({ rows: Number(row!.rows), ids: Number(row!.ids) }).to.deep.equal({ rows: events.produced.length, ids: events.produced.length });
    } finally {
      await sql.close();
    }
  });
});
