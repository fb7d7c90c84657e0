import { expect } from 'chai';
import type { CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { eventSeries } from '../../support/factories.js';
import type { TestGateway, Tenant } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const at = (second: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + second * 1000).toISOString();

describeOnEachStore('event feed time bounds and ETag (extensions beyond v1)', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    // Seconds 0..29 of 2026-01-01, one event each.
    await gw.seed(eventSeries(30, { org_id: tenant.orgId, project_id: tenant.projectId }));
  });

  const page = (query: string, extra: Record<string, string> = {}) =>
    gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers: { ...headers, ...extra } });
  const refused = (query: string) => gw.call<ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
  const seconds = (res: { body: CanonicalEventPageResponse }) => res.body.data.items.map((e) => (Date.parse(e.occurred_at) - Date.parse(at(0))) / 1000);

  it('keeps occurred_at in [since, until), in any offset', async () => {
    expect(seconds(await page(`?since=${encodeURIComponent(at(10))}&until=${encodeURIComponent(at(15))}`))).to.deep.equal([14, 13, 12, 11, 10]);
    expect(seconds(await page(`?since=${encodeURIComponent('2026-01-01T01:00:27+01:00')}`))).to.deep.equal([29, 28, 27]);
    expect(seconds(await page(`?until=${encodeURIComponent(at(2))}`))).to.deep.equal([1, 0]);
    expect((await page(`?since=${encodeURIComponent(at(20))}&until=${encodeURIComponent(at(20))}`)).body.data.items).to.deep.equal([]);
  });

  it('pages a bounded window by cursor, and refuses that cursor with other bounds', async () => {
    const window = `since=${encodeURIComponent(at(5))}&until=${encodeURIComponent(at(25))}`;
    const first = await page(`?limit=8&${window}`);
    const second = await page(`?limit=8&${window}&cursor=${encodeURIComponent(first.body.meta.next_cursor!)}`);
    const third = await page(`?limit=8&${window}&cursor=${encodeURIComponent(second.body.meta.next_cursor!)}`);
    expect([...seconds(first), ...seconds(second), ...seconds(third)]).to.deep.equal(Array.from({ length: 20 }, (_, i) => 24 - i));
    expect(third.body.meta).to.deep.include({ has_more: false, next_cursor: null });

    const replayed = await refused(`?limit=8&since=${encodeURIComponent(at(6))}&until=${encodeURIComponent(at(25))}&cursor=${encodeURIComponent(first.body.meta.next_cursor!)}`);
    expect(replayed.status).to.equal(400);
    expect(replayed.body.message).to.deep.equal({ 'query.cursor': 'is not valid for this project and these filters' });
  });

  it('refuses bounds that are not RFC 3339 or that the store cannot hold, naming the parameter', async () => {
    for (const [query, field] of [['?since=yesterday', 'query.since'], ['?until=2026-01-01', 'query.until'], [`?since=${encodeURIComponent('1800-01-01T00:00:00Z')}`, 'query.since']] as const) {
      const res = await refused(query);
      expect(res.status, query).to.equal(400);
      expect(Object.keys(res.body.message as object), query).to.deep.equal([field]);
    }
  });

  it('answers 304 to a poller whose ETag still matches, and 200 with a new ETag once the page changed', async () => {
    const first = await page('?limit=5');
    const etag = first.headers.get('etag');
    expect(etag).to.match(/^W\/"[A-Za-z0-9_-]{27}"$/);
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');

    const unchanged = await page('?limit=5', { 'if-none-match': etag! });
    expect(unchanged.status).to.equal(304);
    expect(unchanged.text).to.equal('');

    await gw.seed(eventSeries(1, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-01-02T00:00:00Z')));
    const changed = await page('?limit=5', { 'if-none-match': etag! });
    expect(changed.status).to.equal(200);
    expect(changed.headers.get('etag')).to.not.equal(etag);
  });
});
