import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuthTokenError, createOAuthTokenProvider, tokenReuseMs } from '../../../src/kafka/oauth-token-provider.js';

const SECRET = 'client-secret-with:colon&amp';

interface TokenRequest {
  readonly authorization: string | undefined;
  readonly body: URLSearchParams;
}

/** A real token endpoint on loopback that answers what `answer` returns and records each request. */
async function tokenEndpoint(answer: (n: number) => { status: number; body: unknown }): Promise<{ url: string; requests: TokenRequest[]; server: Server }> {
  const requests: TokenRequest[] = [];
  const read = async (req: IncomingMessage) => {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    return new URLSearchParams(text);
  };
  const server = createServer((req, res) => {
    void read(req).then((body) => {
      requests.push({ authorization: req.headers.authorization, body });
      const { status, body: out } = answer(requests.length);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`, requests, server };
}

describe('createOAuthTokenProvider', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('reads a token file again for every token, so a refreshed file is followed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'core-gateway-oauth-'));
    try {
      const path = join(dir, 'token');
      writeFileSync(path, 'first.token\n');
      const provider = createOAuthTokenProvider({ kind: 'file', path }, { logicalCluster: 'lkc-1' });
      expect(await provider()).to.deep.equal({ value: 'first.token', extensions: { logicalCluster: 'lkc-1' } });
      writeFileSync(path, 'second.token');
      expect((await provider()).value).to.equal('second.token');
      rmSync(path);
      const error = await provider().then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(OAuthTokenError).with.property('message', 'cannot read KAFKA_SASL_OAUTH_TOKEN_FILE (ENOENT)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('asks the endpoint with the client-credentials grant and HTTP Basic, once for callers at the same time, and reuses the token', async () => {
    const endpoint = await tokenEndpoint((n) => ({ status: 200, body: { access_token: `token-${n}`, token_type: 'Bearer', expires_in: 3600 } }));
    server = endpoint.server;
    const provider = createOAuthTokenProvider({ kind: 'client-credentials', url: endpoint.url, clientId: 'gateway', clientSecret: SECRET, scope: 'kafka' }, undefined);
    const tokens = await Promise.all([provider(), provider(), provider()]);
    expect(tokens.map((t) => t.value)).to.deep.equal(['token-1', 'token-1', 'token-1']);
    expect((await provider()).value).to.equal('token-1');
    expect(endpoint.requests).to.have.length(1);
    const [request] = endpoint.requests;
    expect(Object.fromEntries(request!.body)).to.deep.equal({ grant_type: 'client_credentials', scope: 'kafka' });
    const [id, secret] = Buffer.from(request!.authorization!.replace(/^Basic /, ''), 'base64').toString().split(':');
    expect([decodeURIComponent(id!), decodeURIComponent(secret!)]).to.deep.equal(['gateway', SECRET]);
  });

  it('reuses a token for 80% of its life, but not into its last 30 s, nor past half of a short one', () => {
    expect(tokenReuseMs(3600)).to.equal(2880_000);
    expect(tokenReuseMs(300)).to.equal(240_000);
    expect(tokenReuseMs(100)).to.equal(70_000);
    expect(tokenReuseMs(40)).to.equal(20_000);
    expect(tokenReuseMs(10)).to.equal(5000);
  });

  it('reuses a token until its reuse time has passed, then asks again', async () => {
    const endpoint = await tokenEndpoint((n) => ({ status: 200, body: { access_token: `token-${n}`, expires_in: 100 } }));
    server = endpoint.server;
    // A clock the test moves: the refresh point is tokenReuseMs(100) = 70 s after the answer, however slow the machine.
    let clock = 1_000_000;
    const provider = createOAuthTokenProvider({ kind: 'client-credentials', url: endpoint.url, clientId: 'gateway', clientSecret: SECRET, scope: undefined }, undefined, {
      now: () => clock,
    });
    expect((await provider()).value).to.equal('token-1');
    clock += 69_999;
    expect((await provider()).value).to.equal('token-1');
    expect(endpoint.requests).to.have.length(1);
    clock += 1;
    expect((await provider()).value).to.equal('token-2');
    expect((await provider()).value).to.equal('token-2');
    expect(endpoint.requests).to.have.length(2);
    expect(endpoint.requests[0]!.body.has('scope')).to.equal(false);
  });

  it('assumes a lifetime of 300 s when the endpoint gives none', async () => {
    const endpoint = await tokenEndpoint((n) => ({ status: 200, body: { access_token: `token-${n}` } }));
    server = endpoint.server;
    let clock = 1_000_000;
    const provider = createOAuthTokenProvider({ kind: 'client-credentials', url: endpoint.url, clientId: 'gateway', clientSecret: SECRET, scope: undefined }, undefined, {
      now: () => clock,
    });
    expect((await provider()).value).to.equal('token-1');
    clock += 239_999;
    expect((await provider()).value).to.equal('token-1');
    clock += 1;
    expect((await provider()).value).to.equal('token-2');
  });

  it('fails with the status and the standard error code, never the secret', async () => {
    const endpoint = await tokenEndpoint(() => ({ status: 401, body: { error: 'invalid_client', error_description: `bad secret ${SECRET}` } }));
    server = endpoint.server;
    const provider = createOAuthTokenProvider({ kind: 'client-credentials', url: endpoint.url, clientId: 'gateway', clientSecret: SECRET, scope: undefined }, undefined);
    const error = (await provider().then(() => undefined, (e: unknown) => e)) as Error;
    expect(error).to.be.instanceOf(OAuthTokenError);
    expect(error.message).to.equal(`token endpoint ${new URL(endpoint.url).host} answered 401 (invalid_client)`);
  });
});
