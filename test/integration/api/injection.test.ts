import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse, ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { canonicalEvent, eventSeries, uuid } from '../../support/factories.js';
import type { HttpResponse } from '../../support/http-client.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Values that would break out of a hand-built statement, or that ClickHouse reads
 * specially in its escaped formats and query parameters, are data wherever they arrive:
 * a string filter finds the event that holds exactly that string and nothing else, an id
 * that is not a uuid is a 400, and nothing ever answers 5xx or changes what is stored.
 */
const schemas = createSchemaRegistry();

const HOSTILE: readonly string[] = [
  "' OR 1=1 --",
  "' OR '1'='1",
  "x' UNION ALL SELECT * FROM events --",
  "'); DROP TABLE events; --",
  '"; DROP TABLE events; --',
  "\\'",
  '\\',
  '\\\\',
  "'",
  '"',
  '`',
  '--',
  '/*',
  '*/ OR 1=1 /*',
  ';',
  '{org_id:UUID}',
  '{domain:String}',
  "{domain:String}' OR domain != '",
  '\\N',
  'NULL',
  '\\0',
  '\u0000',
  'a\u0000b',
  '%00',
  '%',
  '_',
  "%' OR '%'='",
  '\\x27',
  '\\u0027',
  '\\t',
  'a\tb',
  'a\nb',
  'a\r\nb',
  ' padded ',
  '\u2018curly\u2019',
  '\u201cdouble\u201d',
  '\u02bcmodifier',
  '\uff07fullwidth',
  '$$',
  '$1',
  '?',
  '${org_id}',
  'é🙂',
  '\u202eoverride',
  'a'.repeat(128),
  "'".repeat(128),
  '\\'.repeat(128),
  // 128 code points, but more bytes than that in UTF-8.
  '🙂'.repeat(128),
];

/**
 * Longer than the 128 characters a filter or an event's domain may have, yet short enough
 * that the request line stays under the 16 KiB header limit (past it the answer is 431).
 */
const TOO_LONG: readonly string[] = ['a'.repeat(129), "' OR 1=1 --".repeat(200), '\\'.repeat(3000)];

/** An event as the feed serves it: the store keeps microseconds and prints all six digits. */
const served = (e: CanonicalEvent): CanonicalEvent => ({ ...e, occurred_at: e.occurred_at.replace(/\.(\d{3})Z$/, '.$1000Z') });

function expectEnvelope(res: HttpResponse, status: number, what: string): void {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).to.equal(status);
  expect(schemas.check('error-envelope.schema.json', res.body).ok, `${what} in the envelope: ${res.text.slice(0, 300)}`).to.equal(true);
}

const label = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…(${s.length})` : s);

describeOnEachStore('injection: hostile strings are data, never SQL', (gateway) => {
  let gw: TestGateway;
  let victim: Tenant;
  let control: Tenant;
  let headers: Record<string, string>;
  // One event per hostile string, holding it in every string field it fits.
  const carriers = new Map<string, CanonicalEvent>();
  const CONTROL_EVENTS = 7;

  const feed = (tenant: Tenant, q: string, h?: Record<string, string>) =>
    tenant.headers().then((own) => gw.call<CanonicalEventPageResponse | ErrorEnvelope>('GET', `/projects/${tenant.projectId}/events${q}`, { headers: h ?? own }));
  const items = (res: HttpResponse<CanonicalEventPageResponse | ErrorEnvelope>) => (res.body as CanonicalEventPageResponse).data.items;

  /** Every event of the tenant's project, counted through the feed. */
  async function countOf(tenant: Tenant): Promise<number> {
    let total = 0;
    let cursor: string | null = null;
    do {
      const res = await feed(tenant, `?limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      expect(res.status, res.text).to.equal(200);
      total += items(res).length;
      cursor = (res.body as CanonicalEventPageResponse).meta.next_cursor;
    } while (cursor !== null);
    return total;
  }

  before(async () => {
    gw = await gateway();
    victim = gw.tenant();
    control = gw.tenant();
    headers = await victim.headers();
    await gw.seed(eventSeries(CONTROL_EVENTS, { org_id: control.orgId, project_id: control.projectId }));
    const start = Date.parse('2026-02-01T00:00:00Z');
    HOSTILE.forEach((s, i) => {
      carriers.set(
        s,
        canonicalEvent({
          org_id: victim.orgId,
          project_id: victim.projectId,
          domain: s,
          entity: s,
          action: s,
          source_service: s,
          occurred_at: new Date(start + i * 1000).toISOString(),
          payload: { [s]: s, nested: { list: [s, { [s]: [s] }] } },
        }),
      );
    });
    // A decoy the hostile strings would find if any of them were read as a pattern or a condition.
    await gw.seed([...carriers.values(), canonicalEvent({ org_id: victim.orgId, project_id: victim.projectId, domain: 'decoy', entity: 'decoy', action: 'decoy' })]);
    expect(await countOf(control)).to.equal(CONTROL_EVENTS);
  });

  after(async () => {
    // Nothing dropped, truncated or rewritten: the bystander holds what it held, and so does the caller.
    expect(await countOf(control), "the control tenant's events").to.equal(CONTROL_EVENTS);
    expect(await countOf(victim), "the caller's events").to.equal(HOSTILE.length + 1);
  });

  for (const filter of ['domain', 'entity', 'action'] as const) {
    it(`finds exactly the event holding each hostile ${filter}, and nothing else`, async () => {
      for (const [s, carrier] of carriers) {
        const res = await feed(victim, `?${filter}=${encodeURIComponent(s)}`);
        expect(res.status, `${filter}=${label(s)}: ${res.text.slice(0, 300)}`).to.equal(200);
        expect(items(res), `${filter}=${label(s)}`).to.deep.equal([served(carrier)]);
      }
    });

    it(`answers a ${filter} filter over 128 characters with 400 in the envelope`, async () => {
      for (const s of TOO_LONG) expectEnvelope(await feed(victim, `?${filter}=${encodeURIComponent(s)}`), 400, `${filter}=${label(s)}`);
    });
  }

  it('answers hostile uuid filters, time bounds, limits and cursors with 400 in the envelope', async () => {
    const notUuids = [...HOSTILE, ...TOO_LONG, `${uuid()}' OR 1=1 --`, `${uuid()}\u0000`, `${uuid()}\n`, `'${uuid()}'`];
    for (const name of ['device_id', 'fleet_id', 'since', 'until', 'limit', 'cursor']) {
      for (const s of notUuids) expectEnvelope(await feed(victim, `?${name}=${encodeURIComponent(s)}`), 400, `${name}=${label(s)}`);
    }
  });

  it('answers hostile path values with 400 (or 404 where the value splits the path) in the envelope', async () => {
    const pathValues = [...HOSTILE, ...TOO_LONG.slice(0, 2), `${uuid()}' OR 1=1 --`, `${uuid()}%00`];
    for (const s of pathValues) {
      const segment = encodeURIComponent(s);
      const calls: [string, string, unknown][] = [
        ['GET', `/projects/${segment}/events`, undefined],
        ['GET', `/projects/${segment}/events/stream`, undefined],
        ['POST', `/projects/${victim.projectId}/fleets/${segment}/devices/${uuid()}/enroll`, {}],
        ['POST', `/projects/${victim.projectId}/fleets/${uuid()}/devices/${segment}/enroll`, {}],
        ['PATCH', `/projects/${segment}/fleets/${uuid()}/edge/policy`, { a: 1 }],
      ];
      for (const [method, path, body] of calls) {
        const res = await gw.call(method, path, { headers, ...(body === undefined ? {} : { body }) });
        expect(res.status, `${method} ${path.slice(0, 120)}: ${res.text.slice(0, 300)}`).to.be.oneOf([400, 404]);
        expectEnvelope(res, res.status, `${method} with ${label(s)}`);
      }
    }
  });

  it('answers a hostile ORG-ID with 401 in the envelope and reads nothing', async () => {
    // Header values carry no line breaks or NULs, and fetch sends only latin1.
    const sendable = HOSTILE.filter((s) => /^[\x20-\x7e]+$/.test(s) && s.trim() === s);
    for (const s of sendable) {
      const res = await feed(victim, '', { ...headers, 'org-id': s });
      expect(res.status, `ORG-ID ${label(s)}: ${res.text.slice(0, 300)}`).to.be.oneOf([401, 403]);
      expectEnvelope(res, res.status, `ORG-ID ${label(s)}`);
    }
  });

  it('stores hostile strings in every field and reads them back byte for byte', async () => {
    const long = HOSTILE.join('\u0001').repeat(40);
    const event = canonicalEvent({
      org_id: victim.orgId,
      project_id: uuid(),
      domain: 'readback',
      source_service: "'); DROP TABLE events; --",
      span_id: '\\N',
      trace_id: '{org_id:UUID}',
      payload: { long, keys: Object.fromEntries(HOSTILE.map((s, i) => [s, i])), values: [...HOSTILE], nul: '\u0000', backslashes: '\\\\\\' },
    });
    await gw.seed([event]);
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${event.project_id}/events`, { headers });
    expect(res.status, res.text.slice(0, 300)).to.equal(200);
    expect(res.body.data.items).to.deep.equal([served(event)]);
    // Byte for byte, not just equal after JSON parsing: the long text comes back in full.
    expect((res.body.data.items[0]?.payload as { long?: unknown } | null)?.long).to.equal(long);
  });
});
