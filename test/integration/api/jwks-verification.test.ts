import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { createTokenVerifier, type TokenVerifier } from '../../../src/auth/token-verifier.js';
import { appErrorOf } from '../../support/rejections.js';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/** AUTH_JWKS_URL: keys fetched from a real HTTP endpoint on loopback. */
describe('token verification against a JWKS endpoint', () => {
  let server: Server;
  let url: URL;
  let keys: { keys: JWK[] };
  let privateKey: PrivateKey;
  /** serve: answer at once; down: drop the connection; slow: answer after 10 s; stall: send headers, then nothing. */
  let mode: 'serve' | 'down' | 'slow' | 'stall' = 'serve';
  let hits = 0;
  const stalled = new Set<NodeJS.Timeout>();

  async function publishedKey(kid: string): Promise<{ jwk: JWK; privateKey: PrivateKey }> {
    const pair = await generateKeyPair('RS256', { extractable: true });
    return { jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' }, privateKey: pair.privateKey };
  }

  before(async () => {
    const k1 = await publishedKey('k1');
    privateKey = k1.privateKey;
    keys = { keys: [k1.jwk] };
    server = createServer((req, res) => {
      hits += 1;
      if (mode === 'down') {
        req.socket.destroy();
        return;
      }
      if (mode === 'stall') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"keys":');
        return;
      }
      const answer = JSON.stringify(keys);
      const send = (): void => {
        res.setHeader('content-type', 'application/json');
        res.end(answer);
      };
      if (mode === 'slow') {
        const timer = setTimeout(() => {
          stalled.delete(timer);
          send();
        }, 10_000);
        stalled.add(timer);
        return;
      }
      send();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`);
  });
  afterEach(() => {
    mode = 'serve';
    for (const timer of stalled) clearTimeout(timer);
    stalled.clear();
    server.closeAllConnections();
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const sign = (kid: string, key: PrivateKey = privateKey) =>
    new SignJWT({ org_ids: ['aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'], scope: 'events:read' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setSubject('svc')
      .setExpirationTime('5m')
      .sign(key);

  async function until(condition: () => boolean, what: string, limitMs = 5000): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * A verifier on a clock the test moves, so cooldowns and max ages pass without sleeping.
   * Its fetches go to the real endpoint and are counted as they start, so "no fetch" is
   * known at once, with no wait for a request that might still be on its way.
   */
  function verifierWithClock(timing: { timeoutMs?: number; cooldownMs?: number; maxAgeMs?: number } = {}) {
    const clock = { ms: Date.now() };
    const fetches = { started: 0, settled: 0 };
    const countedFetch: typeof fetch = (input, init) => {
      fetches.started += 1;
      return fetch(input, init).finally(() => (fetches.settled += 1));
    };
    const verifier: TokenVerifier = createTokenVerifier({
      key: { kind: 'jwks', url, timeoutMs: 1000, cooldownMs: 30_000, maxAgeMs: 600_000, ...timing },
      // jose checks exp against this clock too, so it must stay near real time.
      now: () => clock.ms,
      fetch: countedFetch,
      // Off, so every verify asks the key store these tests are about (a repeated token would be answered from the cache).
      cache: false,
    });
    return { verifier, fetches, advance: (ms: number) => (clock.ms += ms) };
  }

  it('verifies a token signed by a published key', async () => {
    const principal = await createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('k1'));
    expect(principal.subject).to.equal('svc');
  });

  it('is a 401 for a key id the endpoint does not publish', async () => {
    const error = await appErrorOf(createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('unknown')));
    expect(error.code).to.equal('UNAUTHENTICATED');
    expect(error.detail).to.match(/unknown key/);
  });

  it('is a 503, not a 401, when the keys cannot be fetched', async () => {
    mode = 'down';
    const error = await appErrorOf(createTokenVerifier({ key: { kind: 'jwks', url } }).verify(await sign('k1')));
    expect(error.code).to.equal('UPSTREAM_UNAVAILABLE');
    expect(error.status).to.equal(503);
  });

  it('keeps verifying known keys when the endpoint goes down, even past the max age', async () => {
    const { verifier, fetches, advance } = verifierWithClock({ maxAgeMs: 60_000 });
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    expect(fetches.started).to.equal(1);
    const before = hits;
    mode = 'down';
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    expect(fetches.started).to.equal(1, 'fresh keys need no fetch');

    advance(61_000);
    // Stale: this request starts a background refresh, which fails, and still verifies.
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    expect(fetches.started).to.equal(2, 'stale keys start a refresh');
    await until(() => fetches.settled === 2, 'the background refresh to fail');
    expect(hits).to.equal(before + 1, 'the refresh reached the endpoint, which dropped it');
    for (let i = 0; i < 5; i += 1) expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    expect(fetches.started).to.equal(2, 'the failed refresh starts the cooldown');
  });

  it('answers an unknown kid within the timeout when the endpoint is slow, and known kids at once', async () => {
    const bound = 1000;
    const { verifier, advance } = verifierWithClock({ timeoutMs: bound });
    await verifier.verify(await sign('k1'));
    advance(31_000);
    mode = 'slow';

    const started = Date.now();
    const unknown = appErrorOf(verifier.verify(await sign('k9')));
    await until(() => stalled.size === 1, 'the refetch to reach the slow endpoint');
    // While that fetch hangs, a known kid does not queue behind it.
    const knownStarted = Date.now();
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    expect(Date.now() - knownStarted).to.be.below(bound / 2);

    const error = await unknown;
    const elapsed = Date.now() - started;
    // 503: the key may exist, the endpoint could not say; the client may retry.
    expect(error.code).to.equal('UPSTREAM_UNAVAILABLE');
    expect(elapsed).to.be.at.least(bound - 50, 'the request waited for the fetch');
    expect(elapsed).to.be.below(bound + 3000, 'the request did not wait past the bound');
  });

  it('abandons a response that stops after its headers at the same bound', async () => {
    const bound = 800;
    const { verifier, advance } = verifierWithClock({ timeoutMs: bound });
    await verifier.verify(await sign('k1'));
    advance(31_000);
    mode = 'stall';
    const started = Date.now();
    const error = await appErrorOf(verifier.verify(await sign('k9')));
    const elapsed = Date.now() - started;
    expect(error.code).to.equal('UPSTREAM_UNAVAILABLE');
    expect(elapsed).to.be.at.least(bound - 50);
    expect(elapsed).to.be.below(bound + 3000);
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
  });

  it('refetches at most once per cooldown for a burst of unknown kids, whether the endpoint answers or not', async () => {
    const { verifier, advance } = verifierWithClock();
    await verifier.verify(await sign('k1'));
    const start = hits;

    advance(31_000);
    const burst = await Promise.all(Array.from({ length: 50 }, async (_, i) => appErrorOf(verifier.verify(await sign(`u${i}`)))));
    expect(burst.every((e) => e.code === 'UNAUTHENTICATED')).to.equal(true);
    for (let i = 0; i < 20; i += 1) expect((await appErrorOf(verifier.verify(await sign(`v${i}`)))).code).to.equal('UNAUTHENTICATED');
    expect(hits).to.equal(start + 1);

    advance(31_000);
    mode = 'down';
    const down = await Promise.all(Array.from({ length: 50 }, async (_, i) => appErrorOf(verifier.verify(await sign(`w${i}`)))));
    // After a failed fetch the gateway cannot tell unknown from unpublished-yet: 503 until the next try.
    expect(down.every((e) => e.code === 'UPSTREAM_UNAVAILABLE')).to.equal(true);
    for (let i = 0; i < 20; i += 1) expect((await appErrorOf(verifier.verify(await sign(`x${i}`)))).code).to.equal('UPSTREAM_UNAVAILABLE');
    expect(hits).to.equal(start + 2);
    expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
  });

  it('picks up a key rotated in at the endpoint once the cooldown has passed', async () => {
    const { verifier, advance } = verifierWithClock();
    await verifier.verify(await sign('k1'));
    // A first look for k2 before it is published starts the cooldown.
    expect((await appErrorOf(verifier.verify(await sign('k2')))).code).to.equal('UNAUTHENTICATED');

    const k2 = await publishedKey('k2');
    const original = keys;
    keys = { keys: [...original.keys, k2.jwk] };
    try {
      const token = await sign('k2', k2.privateKey);
      expect((await appErrorOf(verifier.verify(token))).code).to.equal('UNAUTHENTICATED', 'still cooling down');
      advance(31_000);
      expect((await verifier.verify(token)).subject).to.equal('svc');
      expect((await verifier.verify(await sign('k1'))).subject).to.equal('svc');
    } finally {
      keys = original;
    }
  });
});
