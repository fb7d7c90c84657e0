import { expect } from 'chai';
import { createCoreApiClient, CoreApiError, type FetchLike } from '../../../client/index.js';
import { backoffDelay, decideAfterAnswer, parseRetryAfter, resolveRetryPolicy, sleep } from '../../../client/retry.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('client retry policy', () => {
  describe('parseRetryAfter', () => {
    const cases: [string | null, number | undefined][] = [
      ['1', 1000],
      ['0', 0],
      [' 30 ', 30_000],
      // Digits are seconds, never a year for Date.parse.
      ['120', 120_000],
      ['Sun, 01 Mar 2026 12:00:05 GMT', 5000],
      ['Sunday, 01-Mar-26 12:00:07 GMT', 7000],
      // A date already past means: try now.
      ['Sat, 28 Feb 2026 12:00:00 GMT', 0],
      ['1.5', undefined],
      ['-1', undefined],
      ['soon', undefined],
      ['', undefined],
      [null, undefined],
    ];
    for (const [header, expected] of cases) {
      it(`reads ${JSON.stringify(header)} as ${String(expected)}`, () => expect(parseRetryAfter(header, NOW)).to.equal(expected));
    }
  });

  describe('backoffDelay', () => {
    const policy = (random: () => number) => ({ baseDelayMs: 100, maxDelayMs: 5000, random });

    it('doubles its cap from baseDelayMs and stops at maxDelayMs', () => {
      const highest = [1, 2, 3, 4, 5, 6, 7, 10, 60].map((retry) => backoffDelay(retry, policy(() => 0.999999)));
      expect(highest).to.deep.equal([99, 199, 399, 799, 1599, 3199, 4999, 4999, 4999]);
    });

    it('draws below the cap, down to no wait, so failed clients spread out', () => {
      expect(backoffDelay(3, policy(() => 0))).to.equal(0);
      expect(backoffDelay(3, policy(() => 0.5))).to.equal(200);
    });

    it('stays within [0, cap) for any draw', () => {
      for (let retry = 1; retry <= 20; retry += 1) {
        const cap = Math.min(5000, 100 * 2 ** (retry - 1));
        for (let i = 0; i < 50; i += 1) {
          const delay = backoffDelay(retry, policy(Math.random));
          expect(delay).to.be.at.least(0);
          expect(delay).to.be.below(cap);
        }
      }
    });
  });

  describe('decideAfterAnswer', () => {
    const policy = resolveRetryPolicy({ attempts: 3, baseDelayMs: 100, maxDelayMs: 5000, random: () => 0.5, now: () => NOW });

    it('waits what Retry-After asks', () => expect(decideAfterAnswer(1, '2', policy)).to.deep.equal({ retry: true, delayMs: 2000 }));
    it('waits what an HTTP-date Retry-After asks', () =>
      expect(decideAfterAnswer(1, 'Sun, 01 Mar 2026 12:00:03 GMT', policy)).to.deep.equal({ retry: true, delayMs: 3000 }));
    it('backs off when there is no Retry-After', () => expect(decideAfterAnswer(2, null, policy)).to.deep.equal({ retry: true, delayMs: 100 }));
    it('backs off when Retry-After is unreadable', () => expect(decideAfterAnswer(1, 'later', policy)).to.deep.equal({ retry: true, delayMs: 50 }));
    it('gives up, reporting the wait, when Retry-After is beyond maxDelayMs', () =>
      expect(decideAfterAnswer(1, '6', policy)).to.deep.equal({ retry: false, retryAfterMs: 6000 }));
    it('gives up after the last attempt', () => expect(decideAfterAnswer(3, '1', policy)).to.deep.equal({ retry: false, retryAfterMs: 1000 }));
  });

  describe('resolveRetryPolicy', () => {
    it('defaults to 5 attempts, 100 ms base and 5 s max', () =>
      expect(resolveRetryPolicy()).to.deep.include({ attempts: 5, baseDelayMs: 100, maxDelayMs: 5000 }));
    const bad: [string, Parameters<typeof resolveRetryPolicy>[0]][] = [
      ['no attempt at all', { attempts: 0 }],
      ['a fractional attempt count', { attempts: 1.5 }],
      ['a negative base delay', { baseDelayMs: -1 }],
      ['a max delay below the base', { maxDelayMs: 50 }],
      ['an endless max delay', { maxDelayMs: Infinity }],
    ];
    for (const [what, options] of bad) {
      it(`refuses ${what}`, () => expect(() => resolveRetryPolicy(options)).to.throw(RangeError));
    }
  });

  describe('sleep', () => {
    it('ends early, rejecting with the reason, when its signal aborts', async () => {
      const controller = new AbortController();
      const waiting = sleep(60_000, controller.signal);
      controller.abort(new Error('stop'));
      let caught: unknown;
      await waiting.catch((error: unknown) => (caught = error));
      expect(caught).to.be.an('error').with.property('message', 'stop');
    });
  });
});

interface Call {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly body: string | undefined;
}

type Answer = Response | Error;

/** A fetch that records each call and gives the scripted answers in turn. */
function scripted(answers: Answer[]): { fetch: FetchLike; calls: Call[] } {
  const calls: Call[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, method: init.method ?? 'GET', headers: new Headers(init.headers), body: typeof init.body === 'string' ? init.body : undefined });
    const answer = answers.shift();
    if (answer === undefined) throw new Error('the test gave no answer for this call');
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { fetch, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const unavailable = (headers: Record<string, string> = {}) =>
  json(503, { ok: 0, message: 'Service unavailable', detail: 'Kafka did not acknowledge in time.' }, headers);

const ids = { project: '0b5c8a9e-1f2d-4c3b-8a7e-6d5c4b3a2f10', fleet: '1c6d9b0f-2e3d-4d4c-9b8f-7e6d5c4b3a21', device: '2d7e0c1a-3f4e-4e5d-8c9a-8f7e6d5c4b32' };
const accepted = {
  enrollment_id: '3e8f1d2b-4a5f-4f6e-9d0b-9a8f7e6d5c43',
  status: 'queued',
  project_id: ids.project,
  fleet_id: ids.fleet,
  device_id: ids.device,
  queued_at: '2026-03-01T12:00:00.000Z',
};
const emptyPage = { ok: 1, data: { items: [] }, meta: { items_per_page: 50, count: 0, has_more: false, next_cursor: null } };

describe('client retry loop (scripted fetch)', () => {
  const clientWith = (fetch: FetchLike, waits: number[], token: string | (() => Promise<string>) = 'token-1', attempts = 5) =>
    createCoreApiClient({
      baseUrl: 'http://gateway.test',
      token,
      orgId: 'org-1',
      fetch,
      retry: {
        attempts,
        baseDelayMs: 100,
        maxDelayMs: 5000,
        random: () => 0.5,
        sleep: async (ms) => void waits.push(ms),
      },
    });

  it('rides out two 503s on enroll with one Idempotency-Key on every try, waiting as asked', async () => {
    const { fetch, calls } = scripted([unavailable({ 'retry-after': '1' }), unavailable(), json(202, { ok: 1, data: accepted, meta: null })]);
    const waits: number[] = [];
    const data = await clientWith(fetch, waits).devices.enroll(ids.project, ids.fleet, ids.device, { display_name: 'Pump 7' });

    expect(data).to.deep.equal(accepted);
    expect(calls).to.have.length(3);
    const keys = calls.map((c) => c.headers.get('idempotency-key'));
    expect(keys[0]).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).to.equal(1);
    // Retry-After: 1 is honoured; the second 503 has none, so the second wait is the backoff (cap 200, draw 0.5).
    expect(waits).to.deep.equal([1000, 100]);
    for (const call of calls) {
      expect(call.url).to.equal(`http://gateway.test/core/api/v1/projects/${ids.project}/fleets/${ids.fleet}/devices/${ids.device}/enroll`);
      expect(call.method).to.equal('POST');
      expect(call.body).to.equal('{"display_name":"Pump 7"}');
      expect(call.headers.get('authorization')).to.equal('Bearer token-1');
      expect(call.headers.get('org-id')).to.equal('org-1');
    }
  });

  it('gives each enroll call a key of its own, and uses a given one', async () => {
    const { fetch, calls } = scripted([json(202, { ok: 1, data: accepted, meta: null }), json(202, { ok: 1, data: accepted, meta: null }), json(202, { ok: 1, data: accepted, meta: null })]);
    const client = clientWith(fetch, []);
    await client.devices.enroll(ids.project, ids.fleet, ids.device);
    await client.devices.enroll(ids.project, ids.fleet, ids.device);
    await client.devices.enroll(ids.project, ids.fleet, ids.device, {}, { idempotencyKey: 'mine-1' });
    const keys = calls.map((c) => c.headers.get('idempotency-key'));
    expect(keys[0]).to.not.equal(keys[1]);
    expect(keys[2]).to.equal('mine-1');
  });

  it('asks the token function before every try, so a refreshed token is used by the retry', async () => {
    const { fetch, calls } = scripted([unavailable({ 'retry-after': '0' }), json(200, emptyPage)]);
    let issued = 0;
    await clientWith(fetch, [], async () => `token-${(issued += 1)}`).events.page(ids.project);
    expect(calls.map((c) => c.headers.get('authorization'))).to.deep.equal(['Bearer token-1', 'Bearer token-2']);
  });

  it('retries a 429 too', async () => {
    const { fetch, calls } = scripted([json(429, { ok: 0, message: 'Too many requests', detail: 'Slow down.' }, { 'retry-after': '2' }), json(200, emptyPage)]);
    const waits: number[] = [];
    await clientWith(fetch, waits).events.page(ids.project);
    expect(calls).to.have.length(2);
    expect(waits).to.deep.equal([2000]);
  });

  it('gives up at once when Retry-After is beyond maxDelayMs, reporting what the server asked', async () => {
    const { fetch, calls } = scripted([unavailable({ 'retry-after': '30' })]);
    const waits: number[] = [];
    const error = await clientWith(fetch, waits).events.page(ids.project).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(CoreApiError);
    expect(error).to.deep.include({ status: 503, retryAfterMs: 30_000, attempts: 1, detail: 'Kafka did not acknowledge in time.' });
    expect(calls).to.have.length(1);
    expect(waits).to.deep.equal([]);
  });

  it('throws the last 503 as a CoreApiError after the configured attempts', async () => {
    const { fetch, calls } = scripted([unavailable(), unavailable(), unavailable()]);
    const waits: number[] = [];
    const error = await clientWith(fetch, waits, 'token-1', 3).events.page(ids.project).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(CoreApiError);
    expect(error).to.deep.include({ status: 503, attempts: 3, errorMessage: 'Service unavailable' });
    expect(calls).to.have.length(3);
    expect(waits).to.deep.equal([50, 100]);
  });

  it('does not retry other statuses', async () => {
    const { fetch, calls } = scripted([json(500, { ok: 0, message: 'Internal error', detail: 'Internal error.' })]);
    const error = await clientWith(fetch, []).events.page(ids.project).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(CoreApiError).with.property('status', 500);
    expect(calls).to.have.length(1);
  });

  it('retries a GET and an enroll after a network failure, with backoff', async () => {
    const { fetch, calls } = scripted([
      new TypeError('fetch failed'),
      json(200, emptyPage),
      new TypeError('fetch failed'),
      json(202, { ok: 1, data: accepted, meta: null }),
    ]);
    const waits: number[] = [];
    const client = clientWith(fetch, waits);
    await client.events.page(ids.project);
    await client.devices.enroll(ids.project, ids.fleet, ids.device);
    expect(calls).to.have.length(4);
    expect(calls[2]!.headers.get('idempotency-key')).to.equal(calls[3]!.headers.get('idempotency-key'));
    expect(waits).to.deep.equal([50, 50]);
  });

  it('retries an edge-policy PATCH on a 503 answer, but not after a network failure', async () => {
    const policyAccepted = { command_id: accepted.enrollment_id, project_id: ids.project, fleet_id: ids.fleet, patch: { a: 1 }, status: 'accepted', accepted_at: accepted.queued_at };
    const { fetch, calls } = scripted([unavailable({ 'retry-after': '1' }), json(200, { ok: 1, data: policyAccepted, meta: null }), new TypeError('fetch failed')]);
    const client = clientWith(fetch, []);
    expect(await client.edgePolicy.patch(ids.project, ids.fleet, { a: 1 })).to.deep.equal(policyAccepted);
    expect(calls).to.have.length(2);
    const error = await client.edgePolicy.patch(ids.project, ids.fleet, { a: 1 }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(TypeError).with.property('message', 'fetch failed');
    expect(calls).to.have.length(3);
  });

  it('stops retrying when the caller aborts', async () => {
    const controller = new AbortController();
    const { fetch, calls } = scripted([unavailable()]);
    const client = createCoreApiClient({
      baseUrl: 'http://gateway.test',
      token: 't',
      orgId: 'o',
      fetch,
      retry: {
        sleep: async (_ms, signal) => {
          controller.abort(new Error('caller gave up'));
          if (signal?.aborted === true) throw signal.reason;
        },
      },
    });
    const error = await client.events.page(ids.project, {}, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).to.be.an('error').with.property('message', 'caller gave up');
    expect(calls).to.have.length(1);
  });
});
