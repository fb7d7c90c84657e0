import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { MAX_PARTITIONS_PER_INSERT } from '../../../src/store/event-batches.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { eventRowText } from '../../../src/store/event-row-text.js';
import { scopeSpan } from '../../../src/store/event-spans.js';
import type { FeedFilters } from '../../../src/store/event-store.js';
import { migrate } from '../../../src/store/migrations.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { describeOnEachStore } from './gateways.js';

describeOnEachStore('feed spans: where each scope\'s events lie', (gateway) => {
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore((await gateway()).config);
  });

  after(() => sql.close());

  /** Events of a fresh project, one at each instant, with the domain and action given in turn. */
  function projectEvents(instants: readonly string[], domains = ['telemetry'], actions = ['recorded']): CanonicalEvent[] {
    const base = { org_id: uuid(), project_id: uuid() };
    return instants.map((occurred_at, n) => canonicalEvent({ ...base, occurred_at, domain: domains[n % domains.length]!, action: actions[n % actions.length]! }));
  }

  const write = (events: readonly CanonicalEvent[]) => createClickHouseEventStore(sql).insertEvents(events.map(storableEvent));
  const spanOf = (event: CanonicalEvent, filters: FeedFilters = {}) => scopeSpan(sql, { orgId: event.org_id, projectId: event.project_id, filters });
  const at = (iso: string) => toStoreTimestamp(iso);

  it('holds the oldest and newest occurred_at of each scope as events are written, and widens as older and newer ones come', async () => {
    const events = projectEvents(['2025-03-01T00:00:00Z', '2026-01-10T12:00:00.123456Z', '2025-11-30T23:59:59.999999Z'], ['telemetry', 'devices'], ['recorded', 'queued', 'queued']);
    await write(events);
    const [first] = events;
    expect(await spanOf(first!)).to.deep.equal({ oldest: at('2025-03-01T00:00:00Z'), newest: at('2026-01-10T12:00:00.123456Z') });
    expect(await spanOf(first!, { domain: 'telemetry' })).to.deep.equal({ oldest: at('2025-03-01T00:00:00Z'), newest: at('2025-11-30T23:59:59.999999Z') });
    expect(await spanOf(first!, { action: 'queued', domain: 'devices' })).to.deep.equal({ oldest: at('2026-01-10T12:00:00.123456Z'), newest: at('2026-01-10T12:00:00.123456Z') });
    expect(await spanOf(first!, { action: 'never-happened' }), 'a scope with no event').to.equal(undefined);
    // A backfill below and a write above, each an insert of its own.
    await write([{ ...first!, id: uuid(), occurred_at: '2024-12-31T00:00:00Z' }]);
    await write([{ ...first!, id: uuid(), occurred_at: '2026-02-01T00:00:00Z' }]);
    expect(await spanOf(first!)).to.deep.equal({ oldest: at('2024-12-31T00:00:00Z'), newest: at('2026-02-01T00:00:00Z') });
  });

  it("writes a batch's spans in an insert that ends before its events' begins, every statement sized as the whole write", async () => {
    const steps: (readonly [string, string, number, number | undefined])[] = [];
    const watched: SqlTransport = {
      ...sql,
      async insert(table, rows, options) {
        steps.push(['start', table, rows.length, options?.writeRows]);
        await sql.insert(table, rows, options);
        steps.push(['end', table, rows.length, options?.writeRows]);
      },
    };
    // One event a month over one month more than an insert may span: the events go as two
    // inserts (src/store/event-batches.ts), the second of one row; a server that buffers
    // small writes (bufferingFor) must see the whole write's size in every statement.
    const total = MAX_PARTITIONS_PER_INSERT + 1;
    const months = Array.from({ length: total }, (_, m) => new Date(Date.UTC(2024, m, 15)).toISOString());
    const events = projectEvents(months);
    await createClickHouseEventStore(watched).insertEvents(events.map(storableEvent));
    expect(steps).to.deep.equal([
      ['start', 'event_spans', 1, total],
      ['end', 'event_spans', 1, total],
      ['start', 'events', MAX_PARTITIONS_PER_INSERT, total],
      ['end', 'events', MAX_PARTITIONS_PER_INSERT, total],
      ['start', 'events', 1, total],
      ['end', 'events', 1, total],
    ]);
    expect(await spanOf(events[0]!)).to.deep.equal({ oldest: at(months[0]!), newest: at(months[total - 1]!) });
  });

  it("fails the store's write probe when the spans table cannot take a write, as a batch would fail on it", async () => {
    const store = createClickHouseEventStore(sql);
    await store.probeWrite();
    await sql.command('DETACH TABLE event_spans');
    let failure: unknown;
    try {
      await store.probeWrite().catch((error: unknown) => (failure = error));
    } finally {
      await sql.command('ATTACH TABLE event_spans');
    }
    expect(failure, 'the probe with the spans table gone').to.be.an('error');
    await store.probeWrite();
  });

  describe('a table written before the spans existed', () => {
    // A month back, within a first page's reach.
    const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

    /** An earlier version's table: events written while nothing kept spans, and no backfill on record. */
    async function earlierVersion(): Promise<CanonicalEvent[]> {
      await sql.command('DROP VIEW IF EXISTS event_spans_view');
      const events = projectEvents([daysAgo(31), daysAgo(30)]);
      await sql.insert('events', events.map((e) => eventRowText(storableEvent(e))));
      await sql.command('TRUNCATE TABLE store_backfills');
      expect(await spanOf(events[0]!), 'written without a span').to.equal(undefined);
      return events;
    }

    const ledger = async () => Number((await sql.query<{ runs: string }>("SELECT count() AS runs FROM store_backfills WHERE name = 'event_spans'"))[0]!.runs);

    it('gains its spans at the next start, from the view it creates and the backfill after it, which runs once', async function () {
      this.timeout(120_000);
      const earlier = await earlierVersion();
      await migrate(sql, { kind: 'single' }, { settleMs: 10 });
      expect(await spanOf(earlier[0]!)).to.deep.equal({ oldest: at(earlier[0]!.occurred_at), newest: at(earlier[1]!.occurred_at) });
      const page = await createClickHouseEventStore(sql).listEvents({ orgId: earlier[0]!.org_id, projectId: earlier[0]!.project_id, filters: {}, after: undefined, limit: 10 });
      expect(page.events.map((e) => e.event.id)).to.deep.equal([earlier[1]!.id, earlier[0]!.id]);
      // Written by a writer that is not the store (an earlier version, SQL): the view keeps its span.
      const later = projectEvents([daysAgo(3)]);
      await sql.insert('events', later.map((e) => eventRowText(storableEvent(e))));
      expect(await spanOf(later[0]!)).to.deep.equal({ oldest: at(later[0]!.occurred_at), newest: at(later[0]!.occurred_at) });
      await migrate(sql);
      expect(await ledger(), 'the backfill on record once').to.equal(1);
    });

    it('records no backfill that failed, and runs it whole at the next start', async function () {
      this.timeout(120_000);
      const earlier = await earlierVersion();
      const failing: SqlTransport = {
        ...sql,
        async command(statement, params) {
          if (statement.startsWith('INSERT INTO event_spans')) throw new Error('the backfill failed');
          await sql.command(statement, params);
        },
      };
      let failure: unknown;
      await migrate(failing, { kind: 'single' }, { settleMs: 10 }).catch((error: unknown) => (failure = error));
      expect(failure).to.be.an('error');
      expect(await ledger(), 'nothing on record').to.equal(0);
      await migrate(sql, { kind: 'single' }, { settleMs: 10 });
      expect(await ledger()).to.equal(1);
      expect(await spanOf(earlier[0]!)).to.deep.equal({ oldest: at(earlier[0]!.occurred_at), newest: at(earlier[1]!.occurred_at) });
    });
  });
});
