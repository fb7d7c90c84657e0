import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { fromStoreTimestamp, toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { wholeFeed } from '../kafka/feed-helpers.js';
import { describeOnEachStore } from './gateways.js';

/** What the feed must show for a message text: what JSON.parse reads from it, as the store normalizes it. */
function asFeedShows(text: string): CanonicalEvent {
  // RFC 8259 lets a reader ignore a byte order mark; JSON.parse does not.
  const read = JSON.parse(text.replace(/^\uFEFF/, '')) as CanonicalEvent;
  const lower = (v: string | null | undefined) => (v == null ? null : v.toLowerCase());
  return {
    id: read.id.toLowerCase(),
    org_id: read.org_id.toLowerCase(),
    project_id: read.project_id.toLowerCase(),
    domain: read.domain,
    entity: read.entity,
    action: read.action,
    occurred_at: fromStoreTimestamp(toStoreTimestamp(read.occurred_at)),
    correlation_id: lower(read.correlation_id),
    device_id: lower(read.device_id),
    fleet_id: lower(read.fleet_id),
    payload: read.payload ?? null,
    source_service: read.source_service ?? null,
    span_id: read.span_id ?? null,
    trace_id: read.trace_id ?? null,
  };
}

/**
 * A canonical event that arrives as plain JSON is written to the store as its own bytes
 * (src/store/event-row-text.ts). Whatever the text looks like, the stored event must be
 * the one validation read from it: these texts are each a way the engine's reading of
 * the bytes and JSON.parse's could part.
 */
describeOnEachStore('an event message stored as its own text', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
  });

  const event = (overrides: Partial<CanonicalEvent> = {}) => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: '2026-03-04T05:06:07.123456Z', ...overrides });
  const upper = (e: CanonicalEvent) => ({ ...e, id: e.id.toUpperCase(), org_id: e.org_id.toUpperCase(), project_id: e.project_id.toUpperCase(), device_id: e.device_id!.toUpperCase() });

  const texts: Record<string, () => string> = {
    'nine fraction digits, cut to six': () => JSON.stringify(event({ occurred_at: '2026-03-04T05:06:07.123456789Z' })),
    'no fraction': () => JSON.stringify(event({ occurred_at: '2026-03-04T05:06:07Z' })),
    'ids in upper case': () => JSON.stringify(upper(event())),
    'pretty-printed over many lines': () => JSON.stringify(event({ payload: { nested: { list: [1, 'two', null, { deep: true }] }, unicode: 'café ☕ 😀' } }), null, 2),
    'payload numbers and escapes in values': () => JSON.stringify(event({ payload: { n: 1500, quote: 'say "hi"\n\ttab', path: 'C:\\dir' } })).replace('1500', '1.5e3'),
    'optional fields absent': () => {
      const { correlation_id, device_id, fleet_id, payload, source_service, span_id, trace_id, ...required } = event();
      void [correlation_id, device_id, fleet_id, payload, source_service, span_id, trace_id];
      return JSON.stringify(required);
    },
    'a top-level key given twice (JSON.parse keeps the last)': () => {
      const e = event({ entity: 'second' });
      return `{"entity":"first",${JSON.stringify(e).slice(1)}`;
    },
    'a key spelled with an escape': () => {
      const e = event({ entity: 'plain' });
      return `${JSON.stringify(e).slice(0, -1)},"\\u0065ntity":"escaped"}`;
    },
    'a leap second, rolled over': () => JSON.stringify(event({ occurred_at: '2016-12-31T23:59:60Z' })),
    'an offset from UTC': () => JSON.stringify(event({ occurred_at: '2026-01-02T01:04:05.5+02:00' })),
    'lower-case t and z': () => JSON.stringify(event({ occurred_at: '2026-03-04t05:06:07.25z' })),
    // As log shippers send lines: an insert body is one row per line, and chDB ends its data at an empty one.
    'a line break after it': () => `${JSON.stringify(event())}\n`,
    'a CRLF after it': () => `${JSON.stringify(event())}\r\n`,
    'a byte order mark before it': () => `\uFEFF${JSON.stringify(event())}`,
    'padded with whitespace': () => ` \t ${JSON.stringify(event())}  \n\n`,
    'pretty-printed with an empty line inside': () => JSON.stringify(event(), null, 2).replace('{\n', '{\n\n'),
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`stores what validation read: ${name}`, async () => {
      const value = text();
      const expected = asFeedShows(value);
      const result = await gw.runtime.ingestor.ingestMessages([{ value: Buffer.from(value) }]);
      expect(result.rejected.map((r) => r.detail)).to.deep.equal([]);
      expect(result.stored).to.equal(1);
      // The whole feed: a page may end short of the history (docs/decisions/feed-time-windows.md), and a leap second of 2016 lies deep in it.
      const feed = await wholeFeed(gw, tenant);
      expect(feed.filter((e) => e.id === expected.id)).to.deep.equal([expected]);
    });
  }

  it('stores a backfill of one device over 20 years, sent at once, though one insert may span only 100 monthly partitions', async () => {
    // A project of its own: twenty years of history would push the other tests' events off their page.
    const history = gw.tenant();
    const device = canonicalEvent().device_id!;
    const values = Array.from({ length: 240 }, (_, month) =>
      JSON.stringify(
        canonicalEvent({ org_id: history.orgId, project_id: history.projectId, device_id: device, occurred_at: new Date(Date.UTC(2006, month, 15, 12)).toISOString() }),
      ),
    );
    const result = await gw.runtime.ingestor.ingestMessages(values.map((v) => ({ value: Buffer.from(v) })));
    expect(result.rejected.map((r) => r.detail)).to.deep.equal([]);
    expect(result.stored).to.equal(values.length);
    const feed = await wholeFeed(gw, history);
    expect(feed).to.have.length(240);
    expect(new Set(feed.map((e) => e.device_id))).to.deep.equal(new Set([device]));
    expect([feed[0]!.occurred_at, feed.at(-1)!.occurred_at]).to.deep.equal(['2025-12-15T12:00:00.000000Z', '2006-01-15T12:00:00.000000Z']);
  });

  it('stores a batch of such texts together, each as validation read it', async () => {
    const values = Object.values(texts).map((text) => text());
    const result = await gw.runtime.ingestor.ingestMessages(values.map((v) => ({ value: Buffer.from(v) })));
    expect(result.rejected.map((r) => r.detail)).to.deep.equal([]);
    expect(result.stored).to.equal(values.length);
    const expected = values.map(asFeedShows);
    const ids = new Set(expected.map((e) => e.id));
    const shown = (await wholeFeed(gw, tenant)).filter((e) => ids.has(e.id));
    expect(shown).to.have.deep.members(expected);
  });
});
