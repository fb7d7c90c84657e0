import { expect } from 'chai';
import fc from 'fast-check';
import { ConfigError } from '../../../src/settings/config-error.js';
import { Registry } from 'prom-client';
import { AppError } from '../../../src/errors/app-error.js';
import { createLogger } from '../../../src/observability/logger.js';
import { COMMAND_TRIES as DROP_TRIES } from '../../../src/store/idempotent-command.js';
import { createRetention, monthOf, monthsPast, retentionCutoff } from '../../../src/store/retention.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { parseRetention } from '../../../src/store/retention-settings.js';

/** The first instant of month YYYYMM, UTC. */
const monthStart = (month: number): number => Date.UTC(Math.floor(month / 100), (month % 100) - 1, 1);
const nextMonth = (month: number): number => (month % 100 === 12 ? month + 89 : month + 1);

describe('retention', () => {
  describe('EVENTS_RETENTION_DAYS', () => {
    it('keeps every event when unset or 0', () => {
      expect(parseRetention({}).days).to.equal(undefined);
      expect(parseRetention({ EVENTS_RETENTION_DAYS: '0' }).days).to.equal(undefined);
    });

    it('reads a whole number of days', () => {
      expect(parseRetention({ EVENTS_RETENTION_DAYS: '90' }).days).to.equal(90);
    });

    for (const bad of ['-1', '1.5', 'ninety', '36501']) {
      it(`refuses "${bad}" naming the variable`, () => {
        expect(() => parseRetention({ EVENTS_RETENTION_DAYS: bad }))
          .to.throw(ConfigError)
          .with.property('message')
          .that.includes('EVENTS_RETENTION_DAYS');
      });
    }
  });

  it('puts the cutoff whole days before now', () => {
    expect(retentionCutoff(new Date('2026-11-28T12:00:00Z'), 90).toISOString()).to.equal('2026-08-30T12:00:00.000Z');
  });

  it('names months in UTC', () => {
    expect(monthOf(new Date('2026-01-31T23:59:59.999Z'))).to.equal(202601);
    expect(monthOf(new Date('2026-12-01T00:00:00Z'))).to.equal(202612);
  });

  it('drops the months wholly before the cutoff, across a year', () => {
    expect(monthsPast(202510, new Date('2026-02-15T00:00:00Z'))).to.deep.equal([202510, 202511, 202512, 202601]);
    // A cutoff at a month's first instant: the month before ends exactly there, and goes.
    expect(monthsPast(202512, new Date('2026-02-01T00:00:00Z'))).to.deep.equal([202512, 202601]);
    expect(monthsPast(202602, new Date('2026-02-28T23:59:59Z'))).to.deep.equal([]);
  });

  it('never drops a month that may hold an event at or after the cutoff, and keeps at most a month more', () => {
    const instants = fc.integer({ min: Date.UTC(2001, 0, 1), max: Date.UTC(2090, 0, 1) });
    fc.assert(
      fc.property(instants, instants, (a, b) => {
        const [oldest, cutoff] = a <= b ? [a, b] : [b, a];
        const dropped = monthsPast(monthOf(new Date(oldest)), new Date(cutoff));
        for (const month of dropped) expect(monthStart(nextMonth(month))).to.be.at.most(cutoff);
        // The month before the cutoff's is gone whenever the store reaches back to it.
        const kept = monthOf(new Date(cutoff));
        if (monthOf(new Date(oldest)) < kept) expect(dropped.at(-1)).to.equal(kept % 100 === 1 ? kept - 89 : kept - 1);
        else expect(dropped).to.deep.equal([]);
      }),
    );
  });

  describe('a drop the store does not answer in time', () => {
    /** A store whose tables' oldest month is January 2003, and whose drops fail as `failures` says, in turn. */
    function store(failures: (Error | undefined)[]) {
      const commands: string[] = [];
      const transport: SqlTransport = {
        kind: 'clickhouse-server',
        async command(sql) {
          commands.push(sql);
          const failure = failures.shift();
          if (failure !== undefined) throw failure;
        },
        async query<Row>(sql: string): Promise<Row[]> {
          const row = sql.includes('oldest_ms') ? { rows: 1, oldest_ms: Date.UTC(2003, 0, 10) } : { rows: 1, month: 200301 };
          return [row as Row];
        },
        async insert() {},
        async ping() {},
        async close() {},
      };
      return { transport, commands };
    }
    const retentionOn = (transport: SqlTransport) =>
      createRetention({ transport, layout: { kind: 'single' }, settings: { days: undefined }, clickhouse: undefined, registry: new Registry(), logger: createLogger('silent'), everyMs: 0 });
    const timeout = () => new AppError('UPSTREAM_UNAVAILABLE', 'event store unavailable during command');
    const cutoff = new Date(Date.UTC(2003, 1, 1));

    it(`asks again, up to ${DROP_TRIES} times, and drops every month once it answers`, async () => {
      const { transport, commands } = store([timeout(), timeout()]);
      const run = await (await retentionOn(transport)).dropBefore(cutoff);
      expect(run.dropped).to.deep.equal(['events/200301', 'events_by_device/200301']);
      expect(commands.filter((c) => c.startsWith('ALTER TABLE events ')), 'the first drop asked three times').to.have.length(DROP_TRIES);
    });

    it(`gives up after ${DROP_TRIES} tries, failing the run`, async () => {
      const { transport, commands } = store(Array.from({ length: DROP_TRIES }, timeout));
      const failed = await (await retentionOn(transport)).dropBefore(cutoff).catch((error: unknown) => error);
      expect(failed).to.be.instanceOf(AppError).with.property('code', 'UPSTREAM_UNAVAILABLE');
      expect(commands).to.have.length(DROP_TRIES);
    });

    it('does not ask again after a failure other than the store not answering', async () => {
      const { transport, commands } = store([new AppError('INTERNAL', 'refused')]);
      const failed = await (await retentionOn(transport)).dropBefore(cutoff).catch((error: unknown) => error);
      expect(failed).to.be.instanceOf(AppError).with.property('code', 'INTERNAL');
      expect(commands).to.have.length(1);
    });
  });
});
