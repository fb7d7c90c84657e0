import { randomBytes } from 'node:crypto';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { expect } from 'chai';
import { clickHouseConnectionOptions } from '../../../src/store/clickhouse-connection-options.js';
import { createClickHouseProjectChanges } from '../../../src/store/clickhouse-project-changes.js';
import { createClickHouseServerTransport, REQUEST_CONNECTIONS } from '../../../src/store/clickhouse-server-transport.js';
import { createClickHouseTail } from '../../../src/store/clickhouse-tail.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';
import { uuid } from '../../support/factories.js';
import { skipUnlessServerStoreTested } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { gatewayOn } from './gateways.js';

/** Settles to whether the call resolved; `settled` says whether it has yet. */
function watched(call: Promise<unknown>) {
  const state = { settled: false, outcome: call.then(() => 'answered', () => 'failed') };
  void state.outcome.then(() => (state.settled = true));
  return state;
}

describe("the store's follow lane [clickhouse-server]", function () {
  this.timeout(120_000);
  let transport: SqlTransport;
  let admin: ClickHouseClient;
  // A text only this run's held reads carry, so that the kill reaches them and nothing else.
  const marker = `held_${randomBytes(6).toString('hex')}`;
  const killHeld = () => admin.command({ query: `KILL QUERY WHERE query LIKE '%${marker}%' AND query NOT LIKE '%KILL%' SYNC` });

  before(async function () {
    skipUnlessServerStoreTested(this);
    const clickhouse = (await gatewayOn('clickhouse-server')).config.clickhouse;
    if (clickhouse === undefined) throw new Error('the clickhouse-server gateway has no ClickHouse server in its config');
    // The gateway's tests shorten the request timeout; a held read here lasts until it is killed.
    transport = await createClickHouseServerTransport({ ...clickhouse, requestTimeoutMs: 120_000 });
    admin = createClient({ url: clickhouse.url, ...clickHouseConnectionOptions(clickhouse) });
  });

  after(async () => {
    // Skipped by TEST_STORES, the suite opened neither.
    if (admin !== undefined) await killHeld();
    await transport?.close();
    await admin?.close();
  });

  it("answers the live tail's and the first-page watch's reads while page reads hold every request connection", async () => {
    // One row a second, each its own block, until killed (or, should the test fail before it
    // kills them, for at most ten minutes): two more than there are sockets, so some wait for one.
    const held = Array.from({ length: REQUEST_CONNECTIONS + 2 }, () =>
      watched(transport.query(`SELECT sleepEachRow(1), '${marker}' FROM numbers(3600) SETTINGS max_block_size = 1, max_execution_time = 600`)),
    );
    await waitFor(`${REQUEST_CONNECTIONS} held reads running on the server`, async () => {
      const result = await admin.query({
        query: `SELECT count() AS n FROM system.processes WHERE query LIKE '%${marker}%' AND query NOT LIKE '%system.processes%'`,
        format: 'JSONEachRow',
      });
      const [row] = await result.json<{ n: string }>();
      return Number(row?.n) >= REQUEST_CONNECTIONS ? true : undefined;
    });
    // A request's read sent now waits for a socket: the proof that every one is held.
    const request = watched(transport.query('SELECT 1 AS one'));

    const tail = createClickHouseTail(transport);
    const changes = createClickHouseProjectChanges(transport);
    const horizon = await tail.tailHorizon(0);
    const shared = await tail.tailProjects({
      scopes: [{ orgId: uuid(), projectId: uuid() }],
      after: { ingestedAt: '1970-01-01 00:00:00.000', id: NIL_UUID },
      before: horizon,
      limit: 10,
    });
    const changed = await changes.changedProjects(horizon, horizon, 10);
    const written = await changes.writtenEvents(horizon, horizon, 10);

    expect(shared.events).to.deep.equal([]);
    expect(changed).to.deep.equal([]);
    expect(written).to.deep.equal([]);
    expect(request.settled, "a request's read answered while the held reads ran: the connections were not all held").to.equal(false);
    expect(held.filter((h) => h.settled)).to.deep.equal([]);

    // The reads that waited for a socket start as the first are killed: kill until none is left.
    await waitFor('every held read to end', async () => {
      await killHeld();
      return held.every((h) => h.settled) ? true : undefined;
    });
    expect(await request.outcome).to.equal('answered');
    expect(new Set(await Promise.all(held.map((h) => h.outcome)))).to.deep.equal(new Set(['failed']));
  });
});
