import { randomUUID } from 'node:crypto';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { pickInfra, startClickHouseInfra, type ClickHouseInfra } from '../../support/infra.js';
import { storeEnvironment, storesUnderTest, type StoreKind } from '../../support/stores.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';

let clickhouse: Promise<ClickHouseInfra> | undefined;

/**
 * A database of its own on the ClickHouse server, for a suite that lays out its tables
 * itself (an earlier version's, say): called in the suite's body, it opens a transport to
 * `prefix_<random>` before the suite and drops the database after it. The transport is
 * read through the returned function, once the suite's hooks have run.
 */
export function serverDatabaseOfItsOwn(prefix: string): () => SqlTransport {
  const database = `${prefix}_${randomUUID().replaceAll('-', '')}`;
  let sql: SqlTransport | undefined;
  before(async () => {
    const { url } = await clickhouseServer();
    sql = await createClickHouseServerTransport({ url, username: undefined, password: undefined, ca: undefined, database, requestTimeoutMs: 30_000, cluster: undefined, idempotencyStore: 'table' });
  });
  after(async () => {
    if (sql === undefined) return;
    await sql.command(`DROP DATABASE IF EXISTS ${database} SYNC`);
    await sql.close();
  });
  return () => {
    if (sql === undefined) throw new Error(`the database ${database} is opened by its suite's before hook`);
    return sql;
  };
}

/**
 * Live-tail settings of the shared gateways, smaller than the defaults so that
 * live-tail.test.ts waits about a second per event rather than two and a half. chDB
 * binds one data directory per process, so that file cannot start a chDB gateway of its
 * own. Only streams feel these; every other file opens none, and the limit is per
 * organization, which each test has to itself. The settle window must still outlast the
 * ClickHouse server's async inserts: rows became visible up to ~0.5 s after their
 * ingested_at here, and with 200 ms a tail skipped one now and then.
 */
export const LIVE_TAIL_ENV = {
  STREAM_SETTLE_MS: '1000',
  STREAM_POLL_MS: '50',
  STREAM_HEARTBEAT_MS: '400',
  STREAM_MAX_PER_ORG: '3',
  // Tests open streams as one caller ("test-user") across tenants, a few at a time.
  STREAM_MAX_PER_CALLER: '6',
  // Small, so that a stalled client is closed after a few inserts of large rows rather than many.
  STREAM_MAX_BUFFER_BYTES: '65536',
} as const;
/**
 * Erasures read every 200 ms instead of 5 s: an erasure waits two reads before it deletes and
 * two after (docs/decisions/erasure.md), which erasure.test.ts would otherwise wait for each time.
 */
export const ERASURE_ENV = { ERASURE_POLL_MS: '200' } as const;
const gateways = new Map<StoreKind, Promise<TestGateway>>();

/** The ClickHouse server under the clickhouse-server gateway, started on first use; tests that break it use it too. */
export function clickhouseServer(): Promise<ClickHouseInfra> {
  clickhouse ??= pickInfra().then((kind) => startClickHouseInfra(kind));
  return clickhouse;
}

/**
 * The gateway of this mocha process on one store, started on first use: the in-process
 * bus over chDB (which binds one data directory per process, so files share it and keep
 * apart by tenant), or over the ClickHouse server, in a database of its own.
 */
export function gatewayOn(store: StoreKind): Promise<TestGateway> {
  let gateway = gateways.get(store);
  if (gateway === undefined) {
    gateway = (async () =>
      startTestGateway({ ...storeEnvironment(store, store === 'chdb' ? undefined : (await clickhouseServer()).url), ...LIVE_TAIL_ENV, ...ERASURE_ENV }))();
    gateways.set(store, gateway);
  }
  return gateway;
}

/** Declares a suite once per store under test (TEST_STORES), with the store's name in its title. */
export function describeOnEachStore(title: string, body: (gateway: () => Promise<TestGateway>, store: StoreKind) => void): void {
  for (const store of storesUnderTest()) {
    describe(`${title} [${store}]`, function () {
      // The first suite on a store starts its server and gateway.
      this.timeout(120_000);
      body(() => gatewayOn(store), store);
    });
  }
}

/** Root hooks, loaded with --require: close the gateways, then the server, after the whole run. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    const started = await Promise.allSettled(gateways.values());
    for (const result of started) if (result.status === 'fulfilled') await result.value.close();
    if (clickhouse !== undefined) await (await clickhouse).stop();
  },
};
