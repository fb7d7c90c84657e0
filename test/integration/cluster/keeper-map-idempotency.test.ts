import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { IdempotencyEntry } from '../../../src/commands/idempotency-store.js';
import { loadConfig, type ClickHouseConfig } from '../../../src/config/config.js';
import { StartupError } from '../../../src/errors/startup-error.js';
import { openIdempotencyStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import { createKeeperMapIdempotencyStore, keeperMapTableStatement } from '../../../src/store/keeper-map-idempotency-store.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { startClickHouseServer } from '../../support/clickhouse-server.js';
import { uuid } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { clusterInfra } from './cluster-suite.js';

const entry = (name: string): IdempotencyEntry => ({ fingerprint: 'same-request', record: name });

/** The KeeperMap idempotency store against real ZooKeeper, through both shards' servers. */
describe('Idempotency-Key claims in KeeperMap [cluster]', function () {
  this.timeout(120_000);
  const transports: SqlTransport[] = [];
  let database: string;

  async function transportTo(url: string, db: string): Promise<SqlTransport> {
    const config: ClickHouseConfig = { ...loadConfig({ CLICKHOUSE_URL: url, CLICKHOUSE_DATABASE: db, AUTH_JWT_SECRET: 'x'.repeat(32) }).clickhouse! };
    const transport = await createClickHouseServerTransport(config);
    transports.push(transport);
    return transport;
  }

  before(async () => {
    database = `test_${randomBytes(5).toString('hex')}`;
  });

  after(async () => {
    for (const t of transports) await t.close();
  });

  it('gives every racing claim, through either server, the one entry that won', async () => {
    const infra = await clusterInfra();
    const [one, two] = await Promise.all(infra.clickhouse.shards.map((s) => transportTo(s.url, database)));
    for (const t of [one!, two!]) await t.command(keeperMapTableStatement(database));
    const stores = [createKeeperMapIdempotencyStore(one!), createKeeperMapIdempotencyStore(two!)];
    for (let round = 0; round < 10; round += 1) {
      const ref = { orgId: uuid(), scope: 'enroll:p:f:d', key: `k-${round}` };
      const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % 2]!.claim(ref, entry(`claim-${i}`))));
      expect(new Set(claims.map((c) => c.record)), `round ${round}`).to.have.length(1);
      const winner = claims[0]!.record;
      expect((await stores[1]!.claim(ref, entry('later'))).record).to.equal(winner);
    }
  });

  it('lets a record expire after its window, and the next claim win afresh', async () => {
    const infra = await clusterInfra();
    const transport = await transportTo(infra.clickhouse.url, database);
    await transport.command(keeperMapTableStatement(database));
    const store = createKeeperMapIdempotencyStore(transport, { windowSeconds: 2 });
    const ref = { orgId: uuid(), scope: 'enroll:p:f:d', key: 'expiring' };
    const claimedAt = Date.now();
    expect((await store.claim(ref, entry('first'))).record).to.equal('first');
    expect((await store.claim(ref, entry('second'))).record).to.equal('first');
    const renewed = await waitFor('the first record expired', async () => {
      const held = await store.claim(ref, entry('after-expiry'));
      return held.record === 'after-expiry' ? held : undefined;
    }, 30_000, 200);
    expect(renewed.record).to.equal('after-expiry');
    expect(Date.now() - claimedAt, 'not before its window').to.be.at.least(2000);
    expect((await store.claim(ref, entry('third'))).record).to.equal('after-expiry');
  });

  it('falls back to the MergeTree table where the server has no Keeper, and refuses to start when KeeperMap was required', async () => {
    const server = await startClickHouseServer();
    try {
      const db = `test_${randomBytes(5).toString('hex')}`;
      const env = { CLICKHOUSE_URL: server.url, CLICKHOUSE_DATABASE: db, AUTH_JWT_SECRET: 'x'.repeat(32) };
      const transport = await transportTo(server.url, db);
      expect((await openIdempotencyStore(transport, loadConfig(env))).compareAndSet).to.equal(false);
      const refused = await openIdempotencyStore(transport, loadConfig({ ...env, IDEMPOTENCY_STORE: 'keeper-map' })).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(StartupError);
      expect((refused as Error).message).to.match(/^IDEMPOTENCY_STORE=keeper-map: .*zookeeper/);
      // And where the server has it, auto takes it.
      const infra = await clusterInfra();
      const withKeeper = await transportTo(infra.clickhouse.url, db);
      expect((await openIdempotencyStore(withKeeper, loadConfig({ ...env, CLICKHOUSE_URL: infra.clickhouse.url }))).compareAndSet).to.equal(true);
    } finally {
      for (const t of transports.splice(0)) await t.close();
      await server.stop();
    }
  });
});
