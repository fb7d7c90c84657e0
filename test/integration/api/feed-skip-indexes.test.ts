import { expect } from 'chai';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { feedSql, olderEventSql } from '../../../src/store/feed-sql.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import type { FeedFilters, FeedQuery } from '../../../src/store/event-store.js';
import type { SqlParams, SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { describeOnEachStore } from './gateways.js';

/** Parts and granules a stage of `EXPLAIN indexes = 1` kept, of those it was given. */
interface Stage {
  readonly parts: readonly [number, number];
  readonly granules: readonly [number, number];
}

/** The stage after the line `header` (`PrimaryKey`, `Name: project_idx`) in the plan's text. */
function stage(plan: string, header: string): Stage {
  const from = plan.indexOf(header);
  expect(from, `${header} in the plan:\n${plan}`).to.be.at.least(0);
  const ratio = (label: string): [number, number] => {
    const match = new RegExp(`${label}: (\\d+)/(\\d+)`).exec(plan.slice(from));
    expect(match, `${label} after ${header} in the plan:\n${plan}`).to.not.equal(null);
    return [Number(match![1]), Number(match![2])];
  };
  return { parts: ratio('Parts'), granules: ratio('Granules') };
}

/** The project id one above `id` in its last hex digits: it sorts between `id` and the id two above. */
function nextId(id: string): string {
  const tail = BigInt(`0x${id.slice(-12)}`) + 1n;
  return `${id.slice(0, -12)}${tail.toString(16).padStart(12, '0')}`;
}

const HOUR = 3_600_000;
const storeTime = (ms: number) => toStoreTimestamp(new Date(ms).toISOString());

/**
 * The events table's structure, indexes included, holding only what these tests write: in
 * the shared table other suites' rows share granules with ours, and what the primary key
 * keeps beside our granule depends on them and on merges.
 */
const TABLE = `events_skip_indexes_${uuid().replaceAll('-', '')}`;
const onTable = (statement: { sql: string; params: SqlParams }) => ({ ...statement, sql: statement.sql.replace(/FROM events\b/, `FROM ${TABLE}`) });

describeOnEachStore('feed: the skip indexes spare the granules that hold no matching row', (gateway) => {
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore((await gateway()).config);
    await sql.command(`CREATE TABLE ${TABLE} AS events`);
  });

  after(async () => {
    await sql.command(`DROP TABLE IF EXISTS ${TABLE}`);
    await sql.close();
  });

  async function plan(query: { sql: string; params: SqlParams }): Promise<string> {
    const rows = await sql.query<{ explain: string }>(`EXPLAIN indexes = 1 ${query.sql}`, query.params);
    return rows.map((r) => r.explain).join('\n');
  }

  /**
   * Two projects of one organization, ids two apart, each with events over the last two
   * hours (so every query below reaches their part by time as well); the page asks for
   * `filters` of the project whose id lies between them, or of the first one.
   */
  async function neighbours(between: boolean, filters: FeedFilters = {}): Promise<FeedQuery> {
    const orgId = uuid();
    const low = `${uuid().slice(0, -12)}100000000000`;
    const high = nextId(nextId(low));
    const now = Date.now();
    const events = [low, high].flatMap((projectId) =>
      Array.from({ length: 5 }, (_, k) => canonicalEvent({ org_id: orgId, project_id: projectId, occurred_at: new Date(now - k * 1_800_000).toISOString() })),
    );
    await createClickHouseEventStore(sql).insertEvents(events.map(storableEvent));
    await sql.command(`INSERT INTO ${TABLE} SELECT * FROM events WHERE org_id = '${orgId}'`);
    return { orgId, projectId: between ? nextId(low) : low, filters, after: undefined, limit: 51 };
  }

  /** The SQL of each kind of query a page makes: its first window, a skip below it, and the check below everything. */
  function pageQueries(query: FeedQuery): Record<'window' | 'skip' | 'check below', { sql: string; params: SqlParams }> {
    const hourAgo = storeTime(Date.now() - HOUR);
    return {
      window: onTable(feedSql(query, { from: hourAgo })),
      skip: onTable(feedSql({ ...query, limit: 1 }, { to: hourAgo }, ['occurred_at'])),
      'check below': onTable(olderEventSql(query, storeTime(Date.now() + HOUR))),
    };
  }

  /**
   * The primary key kept at least the granule the page's key falls in, and `index` was
   * given some of what it kept (the indexes run one after another, each on what the one
   * before it left: their order is the engine's) and dropped all of it.
   */
  async function dropsEverything(name: string, statement: { sql: string; params: SqlParams }, index: string): Promise<void> {
    const text = await plan(statement);
    expect(stage(text, 'PrimaryKey').granules[0], `${name}: the primary key keeps the granule the page's key falls in`).to.be.at.least(1);
    const skip = stage(text, `Name: ${index}`);
    expect(skip.granules[1], `${name}: ${index} is given granules`).to.be.at.least(1);
    expect(skip.granules[0], `${name}: ${index} drops them all`).to.equal(0);
    expect(skip.parts[0], `${name}: no part is read`).to.equal(0);
    expect(await sql.query(statement.sql, statement.params), name).to.deep.equal([]);
  }

  it("reads no granule for a project with no event where its key falls, in a window, a skip and the check below", async () => {
    const query = await neighbours(true);
    for (const [name, statement] of Object.entries(pageQueries(query))) await dropsEverything(name, statement, 'project_idx');
  });

  for (const [column, filters] of [
    ['domain', { domain: 'never-recorded' }],
    ['entity', { entity: 'never-recorded' }],
    ['action', { action: 'never-recorded' }],
  ] as const) {
    it(`reads no granule of the project's own rows when its ${column} filter matches none of them, in a window and a skip`, async () => {
      const { window, skip } = pageQueries(await neighbours(false, filters));
      await dropsEverything('window', window, `${column}_idx`);
      await dropsEverything('skip', skip, `${column}_idx`);
    });
  }

  it('keeps the granules that hold the project and the filter values it asks for', async () => {
    const query = await neighbours(false, { domain: 'telemetry', entity: 'reading', action: 'recorded' });
    const statement = onTable(feedSql(query));
    const text = await plan(statement);
    for (const index of ['project_idx', 'domain_idx', 'entity_idx', 'action_idx']) {
      const [kept, given] = stage(text, `Name: ${index}`).granules;
      expect(kept, index).to.be.at.least(1);
      expect(kept, `${index} keeps all it is given: here only granules holding the project`).to.equal(given);
    }
    expect(await sql.query(statement.sql, statement.params)).to.have.length(5);
  });
});
