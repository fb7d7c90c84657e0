import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose';
import { ALL_SCOPES, uuid } from '../../../support/factories.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../../support/stores.js';
import { startTestGateway, type TestGateway } from '../../../support/test-gateway.js';
import { clickhouseServer } from '../gateways.js';
import { API_PREFIX } from '../../../../src/http/app.js';

/** The four ways a deployment verifies tokens (docs/configuration.md, "Authentication"). */
export const KEY_MODES = ['shared secret', 'JWKS URL', 'public key', 'OIDC discovery'] as const;
export type KeyMode = (typeof KEY_MODES)[number];

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'] | Uint8Array;

/** Every gateway here requires this typ and accepts at most this lifetime, so those rules are probed in every mode. */
export const TOKEN_TYPE = 'at+jwt';
export const MAX_LIFETIME_S = 3600;
export const AUDIENCE = 'core-api';
/** The forwarding proxy every probe comes through; the gateways trust it and read X-Forwarded-For from it. */
export const PROXY_ADDRESS = '127.0.0.2';
export const AUTH_FAILURE_BURST = 30;

export interface ModeGateway {
  readonly mode: KeyMode;
  readonly gateway: TestGateway;
  /** The `iss` this gateway requires. */
  readonly issuer: string;
  /** The key the gateway trusts, as its algorithm names it. */
  readonly alg: string;
  /** The public key's text, for the algorithm-confusion probe; undefined in shared-secret mode. */
  readonly publicPem: string | undefined;
  /** A token with every claim right; `claims` and `header` override or (with undefined) remove. */
  token(orgId: string, claims?: Partial<Record<string, unknown>>, header?: Partial<Record<string, unknown>>): Promise<string>;
  /** Signs exactly what is given with the trusted key. */
  sign(payload: JWTPayload, header: JWTHeaderParameters): Promise<string>;
}

export interface KeyServer {
  readonly origin: string;
  /** Requests per path so far. */
  readonly hits: Map<string, number>;
}

let keyServer: { server: Server; state: KeyServer; jwks: { keys: JWK[] } } | undefined;
let started: Promise<Map<KeyMode, ModeGateway>> | undefined;

async function startKeyServer(): Promise<NonNullable<typeof keyServer>> {
  const hits = new Map<string, number>();
  const jwks: { keys: JWK[] } = { keys: [] };
  let origin = '';
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    res.setHeader('content-type', 'application/json');
    if (path === '/jwks.json') res.end(JSON.stringify(jwks));
    else if (path === '/oidc/.well-known/openid-configuration') res.end(JSON.stringify({ issuer: `${origin}/oidc`, jwks_uri: `${origin}/jwks.json` }));
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { server, state: { origin, hits }, jwks };
}

function signer(key: SigningKey, alg: string, kid: string | undefined, issuer: string) {
  const sign = (payload: JWTPayload, header: JWTHeaderParameters) => new SignJWT(payload).setProtectedHeader(header).sign(key);
  return {
    sign,
    token(orgId: string, claims: Partial<Record<string, unknown>> = {}, header: Partial<Record<string, unknown>> = {}) {
      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, unknown> = {
        sub: `caller-${uuid()}`,
        org_ids: [orgId],
        scope: ALL_SCOPES.join(' '),
        iss: issuer,
        aud: AUDIENCE,
        iat: now,
        exp: now + 600,
        ...claims,
      };
      const protectedHeader: Record<string, unknown> = { alg, typ: TOKEN_TYPE, ...(kid === undefined ? {} : { kid }), ...header };
      for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
      for (const [name, value] of Object.entries(protectedHeader)) if (value === undefined) delete protectedHeader[name];
      return sign(payload, protectedHeader as JWTHeaderParameters);
    },
  };
}

/**
 * One gateway per key mode, on the ClickHouse server (chDB binds one data directory per
 * process, and the suite's own gateway holds it), all with the same token rules and the
 * failed-authentication limit at its default, behind PROXY_ADDRESS as a trusted proxy.
 */
export function modeGateways(): Promise<Map<KeyMode, ModeGateway>> {
  started ??= (async () => {
    keyServer = await startKeyServer();
    const { origin } = keyServer.state;
    const url = (await clickhouseServer()).url;
    const common = {
      ...storeEnvironment('clickhouse-server', url),
      AUTH_JWT_SECRET: '',
      AUTH_AUDIENCE: AUDIENCE,
      AUTH_TOKEN_TYPE: TOKEN_TYPE,
      AUTH_MAX_TOKEN_LIFETIME_S: String(MAX_LIFETIME_S),
      // The product's burst; a slower refill than its 60 a minute, so that a loaded machine
      // cannot refill a bucket between two requests of a probe. The shared test gateways turn the limit off.
      AUTH_FAILURES_PER_MINUTE: '6',
      AUTH_FAILURES_BURST: String(AUTH_FAILURE_BURST),
      TRUSTED_PROXIES: PROXY_ADDRESS,
    };
    const rsa = await generateKeyPair('RS256', { extractable: true });
    keyServer.jwks.keys.push({ ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' });
    const rsaPem = await exportSPKI(rsa.publicKey);
    const ec = await generateKeyPair('ES256', { extractable: true });
    const ecPem = await exportSPKI(ec.publicKey);
    const secret = randomBytes(32).toString('hex');
    const plainIssuer = 'https://issuer.test';
    const oidcIssuer = `${origin}/oidc`;

    const specs: Record<KeyMode, { env: Record<string, string>; key: SigningKey; alg: string; kid?: string; issuer: string; publicPem: string | undefined }> = {
      'shared secret': { env: { AUTH_JWT_SECRET: secret, AUTH_ISSUER: plainIssuer }, key: new TextEncoder().encode(secret), alg: 'HS256', issuer: plainIssuer, publicPem: undefined },
      'JWKS URL': { env: { AUTH_JWKS_URL: `${origin}/jwks.json`, AUTH_ISSUER: plainIssuer }, key: rsa.privateKey, alg: 'RS256', kid: 'k1', issuer: plainIssuer, publicPem: rsaPem },
      'public key': { env: { AUTH_PUBLIC_KEY: ecPem, AUTH_ISSUER: plainIssuer }, key: ec.privateKey, alg: 'ES256', issuer: plainIssuer, publicPem: ecPem },
      'OIDC discovery': { env: { AUTH_OIDC_ISSUER: oidcIssuer }, key: rsa.privateKey, alg: 'RS256', kid: 'k1', issuer: oidcIssuer, publicPem: rsaPem },
    };
    const gateways = new Map<KeyMode, ModeGateway>();
    for (const mode of KEY_MODES) {
      const spec = specs[mode];
      const gateway = await startTestGateway({ ...common, ...spec.env });
      gateways.set(mode, { mode, gateway, issuer: spec.issuer, alg: spec.alg, publicPem: spec.publicPem, ...signer(spec.key, spec.alg, spec.kid, spec.issuer) });
    }
    return gateways;
  })();
  return started;
}

export function keyServerState(): KeyServer {
  if (keyServer === undefined) throw new Error('modeGateways() first');
  return keyServer.state;
}

/**
 * Declares `body` once per key mode. The gateways are on the ClickHouse server; a run
 * that leaves it out (TEST_STORES=chdb) says so and runs none of these.
 */
export function describeInEveryKeyMode(title: string, body: (mg: () => ModeGateway) => void): void {
  for (const mode of KEY_MODES) {
    describe(`${title} [${mode}]`, function () {
      this.timeout(120_000);
      let current: ModeGateway | undefined;
      before(async function () {
        skipUnlessServerStoreTested(this);
        current = (await modeGateways()).get(mode)!;
      });
      body(() => current!);
    });
  }
}

after(async function () {
  this.timeout(60_000);
  if (started !== undefined) for (const { gateway } of (await started.catch(() => new Map<KeyMode, ModeGateway>())).values()) await gateway.close();
  if (keyServer !== undefined) await new Promise<void>((resolve) => keyServer!.server.close(() => resolve()));
});

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: { ok?: number; message?: unknown; detail?: string; data?: unknown; [k: string]: unknown } | undefined;
  readonly text: string;
}

export interface SendOptions {
  /** Header values; an array sends the header once per item, in that order. */
  readonly headers?: Record<string, string | string[]>;
  readonly body?: unknown;
  /** The client address the proxy forwards (X-Forwarded-For), from PROXY_ADDRESS; a fresh one per call unless given. */
  readonly client?: string;
  /** Connect from this loopback address instead of the proxy, with X-Forwarded-For as given in headers. */
  readonly direct?: string;
}

/** A random documentation-range address, as a distinct client behind the proxy. */
export function clientAddress(): string {
  const b = randomBytes(2);
  return `198.18.${b[0]}.${b[1]}`;
}

/** One request over node:http, so that repeated headers and the source address are ours to choose. */
export function send(gateway: TestGateway, method: string, path: string, options: SendOptions = {}): Promise<Answer> {
  const url = new URL(`${gateway.baseUrl}${path.startsWith('/') ? path : `/${path}`}`);
  const headers: Record<string, string | string[]> = { ...options.headers };
  if (options.direct === undefined) headers['x-forwarded-for'] ??= options.client ?? clientAddress();
  let payload: string | undefined;
  if (options.body !== undefined) {
    payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method, headers, localAddress: options.direct ?? PROXY_ADDRESS, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let body: Answer['body'];
          try {
            body = text === '' ? undefined : (JSON.parse(text) as Answer['body']);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The API's error envelope with this status, and nothing a client should not see. */
export function expectRefusal(answer: Answer, status: number, detail?: RegExp): void {
  expect(answer.status, answer.text).to.equal(status);
  expect(answer.body?.ok, answer.text).to.equal(0);
  // A string, or for a 400 the bad fields by name.
  expect(typeof answer.body?.message, answer.text).to.be.oneOf(['string', 'object']);
  expect(answer.text).to.not.match(/\bat .+:\d+:\d+|Error:|SELECT|INSERT|node_modules/);
  if (detail !== undefined) expect(answer.body?.detail, answer.text).to.match(detail);
}

/** A feed read with this token, as the probes' one operation. */
export function feedWith(mg: ModeGateway, token: string, orgId: string, options: SendOptions = {}): Promise<Answer> {
  return send(mg.gateway, 'GET', `/projects/${uuid()}/events?limit=1`, { ...options, headers: { authorization: `Bearer ${token}`, 'org-id': orgId, ...options.headers } });
}

export { API_PREFIX };
