import { expect } from 'chai';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent } from '../../support/factories.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { clusterGatewayEnv, clusterInfra } from './cluster-suite.js';

const RETENTION_DAYS = 90;
/** "Now" for the run: 90 days before it is 2003-02-15, so January 2003 is wholly past and February is not. */
const NOW = new Date(Date.UTC(2003, 1, 15) + RETENTION_DAYS * 86_400_000);
const TABLES = ['events_local', 'events_by_device_local'];

/**
 * Retention on two shards without Keeper DDL: each shard's local tables hold their own
 * months, and the run drops them on each, at the URLs CLICKHOUSE_SHARD_URLS lists.
 */
describe('retention on two ClickHouse shards [cluster]', function () {
  this.timeout(180_000);
  let gw: TestGateway;
  let shards: SqlTransport[] = [];

  before(async () => {
    const infra = await clusterInfra();
    // A database of its own (clusterGatewayEnv), so the setting drops this file's months only.
    gw = await startTestGateway(clusterGatewayEnv(infra, { EVENTS_RETENTION_DAYS: String(RETENTION_DAYS) }));
    const config = gw.config.clickhouse!;
    shards = await Promise.all(infra.clickhouse.shards.map((s) => createClickHouseServerTransport({ ...config, url: s.url, cluster: undefined })));
  });

  after(async () => {
    for (const shard of shards) await shard.close();
    await gw?.close();
  });

  /** Rows of each shard's `table` in 2003's January, and in its March. */
  async function monthsOn(table: string): Promise<{ january: number; march: number }[]> {
    return Promise.all(
      shards.map(async (shard) => {
        const [row] = await shard.query<{ january: string; march: string }>(
          `SELECT countIf(toYYYYMM(occurred_at) = 200301) AS january, countIf(toYYYYMM(occurred_at) = 200303) AS march FROM ${table}`,
        );
        return { january: Number(row!.january), march: Number(row!.march) };
      }),
    );
  }

  it('drops the month past the cutoff from every shard, keeps the months after it, and the feed reads what is kept', async () => {
    // Projects until both shards hold one: which shard takes a project is the Distributed table's choice.
    const tenants: Tenant[] = [];
    for (let attempt = 0; attempt < 64; attempt += 1) {
      const tenant = gw.tenant();
      tenants.push(tenant);
      await gw.seed(
        ['2003-01-10T12:00:00Z', '2003-01-20T12:00:00Z', '2003-03-10T12:00:00Z'].map((occurred_at) =>
          canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at }),
        ),
      );
      if ((await monthsOn('events_local')).every((m) => m.january > 0)) break;
    }
    for (const table of TABLES) for (const held of await monthsOn(table)) expect(held.january, table).to.be.greaterThan(0);

    const run = await gw.runtime.retention.run(NOW);
    // Each shard dropped January from both tables.
    expect(run.dropped.filter((d) => d === 'events_local/200301')).to.have.lengthOf(2);
    expect(run.dropped.filter((d) => d === 'events_by_device_local/200301')).to.have.lengthOf(2);
    expect(run.oldestKept?.toISOString()).to.equal('2003-03-10T12:00:00.000Z');
    for (const table of TABLES) {
      const held = await monthsOn(table);
      expect(held.map((m) => m.january), table).to.deep.equal([0, 0]);
      expect(held.reduce((sum, m) => sum + m.march, 0), table).to.equal(tenants.length);
    }

    // Every project's feed, traversed whole, holds its March event alone (a page of old, sparse history may be empty with a cursor).
    for (const tenant of tenants) {
      const headers = await tenant.headers();
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { status: number; body: CanonicalEventPageResponse } = await gw.call<CanonicalEventPageResponse>(
          'GET',
          `/projects/${tenant.projectId}/events?limit=50${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
          { headers },
        );
        expect(res.status).to.equal(200);
        seen.push(...res.body.data.items.map((e) => e.occurred_at));
        cursor = res.body.meta.next_cursor;
      } while (cursor !== null);
      expect(seen).to.deep.equal(['2003-03-10T12:00:00.000000Z']);
    }
  });
});
