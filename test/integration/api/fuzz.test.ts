import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { createCursorCodec } from '../../../src/feed/pages/cursor.js';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { eventSeries, hs256Token } from '../../support/factories.js';
import {
  bodyRequest,
  cursorCase,
  framingRequest,
  headerRequest,
  pathRequest,
  queryRequest,
  type CursorCase,
  type FuzzContext,
  type FuzzRequest,
} from '../../support/fuzz-arbitraries.js';
import { rawExchange, rawRequestBytes, type RawOutcome } from '../../support/raw-http.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

/**
 * Property-based fuzzing of the running gateway with hostile requests over a bare socket.
 * Whatever arrives: never a 5xx, never a hang, every error in the envelope, and the
 * process still healthy afterwards. FUZZ_RUNS is the number of cases per store, split
 * evenly over the properties (npm run fuzz: 10,000); FUZZ_SEED replays a run.
 */
const PROPERTIES = ['path parameters', 'query strings', 'headers', 'bodies', 'framing', 'cursors'] as const;
type Property = (typeof PROPERTIES)[number];

const totalRuns = Number(process.env['FUZZ_RUNS'] ?? 300 * PROPERTIES.length);
const runsPerProperty = Math.max(1, Math.ceil(totalRuns / PROPERTIES.length));
const seed = process.env['FUZZ_SEED'] === undefined ? undefined : Number(process.env['FUZZ_SEED']);
const printReport = process.env['FUZZ_RUNS'] !== undefined;
// Long enough for any honest answer on a loaded machine; a hang is far longer than any answer.
const ANSWER_WAIT_MS = 10_000;

const schemas = createSchemaRegistry();

/** Outcomes seen, by property and then by status code (or how the connection ended). */
class Tally {
  private readonly counts = new Map<Property, Map<string, number>>();

  add(property: Property, outcome: RawOutcome): void {
    const key = outcome.kind === 'response' ? String(outcome.response.status) : outcome.kind;
    const row = this.counts.get(property) ?? new Map<string, number>();
    row.set(key, (row.get(key) ?? 0) + 1);
    this.counts.set(property, row);
  }

  render(title: string): string {
    const lines = [`fuzz counts ${title} (cases sent, shrinking included)`];
    let total = 0;
    for (const [property, row] of this.counts) {
      const sum = [...row.values()].reduce((a, b) => a + b, 0);
      total += sum;
      const byStatus = [...row.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}: ${n}`);
      lines.push(`  ${property.padEnd(16)} ${String(sum).padStart(6)}  ${byStatus.join(', ')}`);
    }
    lines.push(`  ${'total'.padEnd(16)} ${String(total).padStart(6)}`);
    return lines.join('\n');
  }
}

function send(gw: TestGateway, request: FuzzRequest): Promise<RawOutcome> {
  const bytes = rawRequestBytes(
    request.method,
    Buffer.from(request.target, 'latin1'),
    request.headers.map(([name, value]) => [name, Buffer.from(value, 'latin1')] as const),
    Buffer.from(request.body, 'latin1'),
    { version: request.version, withoutHost: request.withoutHost },
  );
  return rawExchange(new URL(gw.baseUrl), bytes, { waitMs: ANSWER_WAIT_MS, endAfterWrite: request.givesUp, bodiless: request.method === 'HEAD' });
}

/** The properties every answer must have, whatever was sent. */
function expectWellBehaved(request: FuzzRequest, outcome: RawOutcome): void {
  if (outcome.kind === 'timeout') expect.fail(`neither an answer nor a close within ${ANSWER_WAIT_MS} ms`);
  if (outcome.kind === 'garbage') expect.fail(`an answer that is not HTTP: ${outcome.text}`);
  if (outcome.kind === 'closed') {
    // Only a client that gave up mid-request may be left without an answer.
    expect(request.givesUp, 'connection closed without an answer').to.equal(true);
    return;
  }
  const { status, headers, body } = outcome.response;
  expect(status, `status of ${body}`).to.be.below(500);
  if (status < 300 || status === 304) return;
  expect(headers['content-type'], `content type of a ${status}`).to.match(/^application\/json/);
  if (status === 429 || status === 503) expect(headers['retry-after'], 'Retry-After').to.match(/^[1-9]\d*$/);
  if (request.method === 'HEAD') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    expect.fail(`a ${status} whose body is not JSON: ${body.slice(0, 200)}`);
  }
  const checked = schemas.check('error-envelope.schema.json', parsed);
  expect(checked.ok, `a ${status} outside the envelope: ${body.slice(0, 200)}`).to.equal(true);
}

/** -0 as 0, everywhere in a parsed value: JSON has one zero, and the answer comes back through JSON.stringify. */
function plainZeros(value: unknown): unknown {
  if (typeof value === 'number') return value === 0 ? 0 : value;
  if (Array.isArray(value)) return value.map(plainZeros);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainZeros(v)]));
  return value;
}

/**
 * What a 200 to a PATCH accepted is exactly what was sent: a value the gateway changed on
 * the way (a number that overflowed to null, say) would reach the fleet as another patch.
 */
function expectPatchKeptAsSent(request: FuzzRequest, outcome: RawOutcome): void {
  if (outcome.kind !== 'response' || outcome.response.status !== 200 || request.method !== 'PATCH') return;
  if (request.headers.some(([name]) => name.toLowerCase() === 'content-encoding')) return;
  let sent: unknown;
  try {
    sent = JSON.parse(Buffer.from(request.body, 'latin1').toString('utf8').replace(/^\uFEFF/, ''));
  } catch {
    return;
  }
  const answered = (JSON.parse(outcome.response.body) as { data: { patch: unknown } }).data.patch;
  expect(answered, 'the accepted patch').to.deep.equal(plainZeros(sent));
}

function expectCursorVerdict(c: CursorCase, outcome: RawOutcome): void {
  expectWellBehaved(c.request, outcome);
  if (outcome.kind !== 'response') return;
  const { status, body } = outcome.response;
  expect(status, `cursor ${c.variant}: ${body.slice(0, 200)}`).to.equal(c.expected);
  if (c.expected === 400) expect(JSON.parse(body)).to.have.nested.property('message.query\\.cursor');
}

async function fuzzContext(gw: TestGateway): Promise<FuzzContext> {
  const tenant = gw.tenant();
  const other = gw.tenant();
  const domain = 'fuzzing';
  await gw.seed(eventSeries(6, { org_id: tenant.orgId, project_id: tenant.projectId, domain }));
  const headers = await tenant.headers();
  const page = async (query: string) => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=2${query}`, { headers });
    const cursor = res.body.meta.next_cursor;
    if (cursor === null) throw new Error('the seeded feed should have a second page');
    return cursor;
  };
  const plain = await page('');
  const filtered = await page(`&domain=${domain}`);
  // The position of `plain`, signed with a key the gateway never had.
  const [occurredAt, id] = Buffer.from(plain.split('.')[1]!, 'base64url').toString().split('|') as [string, string];
  const foreignKey = createCursorCodec(randomBytes(32)).encode({ occurredAt, id }, { orgId: tenant.orgId, projectId: tenant.projectId, filters: {} });
  const bearer = async (options: Parameters<typeof hs256Token>[1], secret = gw.secret) => `Bearer ${await hs256Token(secret, options)}`;
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return {
    orgId: tenant.orgId,
    projectId: tenant.projectId,
    credentials: {
      valid: headers['authorization']!,
      otherOrg: await bearer({ orgIds: [other.orgId] }),
      noScopes: await bearer({ orgIds: [tenant.orgId], scopes: [] }),
      expired: await bearer({ orgIds: [tenant.orgId], ttlSeconds: -120 }),
      wrongSecret: await bearer({ orgIds: [tenant.orgId] }, randomBytes(32).toString('hex')),
      algNone: `Bearer ${encode({ alg: 'none', typ: 'JWT' })}.${encode({ sub: 'x', org_ids: [tenant.orgId], scope: 'events:read', exp: now + 600 })}.`,
    },
    otherOrg: { orgId: other.orgId, authorization: (await other.headers())['authorization']! },
    cursors: { plain, filtered, domain, foreignKey },
  };
}

describeOnEachStore('fuzzing: bad input never gets a 5xx, a hang or a bare answer', (gateway, store) => {
  let gw: TestGateway;
  let ctx: FuzzContext;
  const tally = new Tally();
  const parameters = (): fc.Parameters<[unknown]> => ({ numRuns: runsPerProperty, ...(seed === undefined ? {} : { seed }) });

  before(async () => {
    gw = await gateway();
    ctx = await fuzzContext(gw);
  });

  after(() => {
    if (printReport) console.log(tally.render(`[${store}]`));
  });

  const plainProperties: readonly [Property, (c: FuzzContext) => fc.Arbitrary<FuzzRequest>, ((r: FuzzRequest, o: RawOutcome) => void)?][] = [
    ['path parameters', pathRequest],
    ['query strings', queryRequest],
    ['headers', headerRequest],
    ['bodies', bodyRequest, expectPatchKeptAsSent],
    ['framing', framingRequest],
  ];
  for (const [property, arbitrary, alsoExpect] of plainProperties) {
    it(`${property}: ${runsPerProperty} cases`, async function () {
      this.timeout(runsPerProperty * 1000 + 60_000);
      await fc.assert(
        fc.asyncProperty(arbitrary(ctx), async (request) => {
          const outcome = await send(gw, request);
          tally.add(property, outcome);
          expectWellBehaved(request, outcome);
          alsoExpect?.(request, outcome);
        }),
        parameters(),
      );
    });
  }

  it(`cursors: ${runsPerProperty} cases, each accepted only by the query that issued it`, async function () {
    this.timeout(runsPerProperty * 1000 + 60_000);
    await fc.assert(
      fc.asyncProperty(cursorCase(ctx), async (c) => {
        const outcome = await send(gw, c.request);
        tally.add('cursors', outcome);
        expectCursorVerdict(c, outcome);
      }),
      parameters(),
    );
  });

  it('still answers /healthz after the run', async () => {
    const res = await fetch(new URL('/healthz', gw.baseUrl));
    expect(res.status).to.equal(200);
  });
});
