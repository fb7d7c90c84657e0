import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { FromProvider, IdentityProviderClient, JwksFetch, ToProvider, TokenRequest } from './identity-provider-process.js';
import { freePort, repoRoot } from './processes.js';
import { permissions } from '../../src/auth/principal.js';

export type { IdentityProviderClient, JwksFetch, TokenRequest };

/** A signing key of the provider; `private` stays with the provider, the public part is in its JWKS. */
export interface ProviderKey {
  readonly kid: string;
  readonly private: JWK;
}

/** The token endpoint's answer, as RFC 6749 section 5.1 gives it. */
export interface TokenResponse {
  readonly access_token: string;
  readonly token_type: string;
  readonly expires_in: number;
  readonly scope?: string;
}

/** test/support/identity-provider-process.ts running as a process of its own. */
export interface IdentityProvider {
  /** http://127.0.0.1:port: the `iss` of its tokens and the base of its discovery document. */
  readonly issuer: string;
  readonly tokenUrl: string;
  readonly jwksUrl: string;
  readonly pid: number;
  /** A token by the client-credentials grant (HTTP Basic client authentication); throws on any answer but 200. */
  token(client: IdentityProviderClient, scope?: string): Promise<TokenResponse>;
  /** The keys it publishes, the signing one among them. */
  keys(): readonly ProviderKey[];
  signingKid(): string;
  /** Publishes exactly `keys` and signs new tokens with `signingKid` from now on. */
  setKeys(keys: readonly ProviderKey[], signingKid: string): Promise<void>;
  /** Every request for its JWKS so far. */
  jwksFetches(): Promise<readonly JwksFetch[]>;
  /** Every answer of its token endpoint so far. */
  tokenRequests(): Promise<readonly TokenRequest[]>;
  stop(): Promise<void>;
}

/** A new RS256 key pair with a random kid. */
export async function newProviderKey(): Promise<ProviderKey> {
  const kid = `k-${randomBytes(6).toString('hex')}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, private: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** A client registered at the provider with a random secret; override any field. */
export function providerClient(overrides: Partial<IdentityProviderClient> & Pick<IdentityProviderClient, 'audience'>): IdentityProviderClient {
  return {
    clientId: `client-${randomBytes(4).toString('hex')}`,
    clientSecret: randomBytes(24).toString('base64url'),
    scope: permissions.join(' '),
    tokenTtlS: 300,
    ...overrides,
  };
}

const START_TIMEOUT_MS = 60_000;

/** Starts the provider on a free loopback port with one signing key, and waits until it listens. */
export async function startIdentityProvider(clients: readonly IdentityProviderClient[]): Promise<IdentityProvider> {
  const port = await freePort();
  let keys: readonly ProviderKey[] = [await newProviderKey()];
  let signingKid = keys[0]!.kid;
  const child: ChildProcess = fork(join(repoRoot, 'test', 'support', 'identity-provider-process.ts'), [], {
    cwd: repoRoot,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  /** Sends one message and waits for the answer of type `expect`, the process's death, or the timeout. */
  function ask<T extends FromProvider['type']>(message: ToProvider, expect: T, timeoutMs = 10_000): Promise<Extract<FromProvider, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`the identity provider did not answer ${message.type} within ${timeoutMs} ms: ${output.slice(-2000)}`)), timeoutMs);
      const onMessage = (answer: FromProvider): void => {
        if (answer.type === 'failed') done(new Error(`the identity provider failed: ${answer.message}`));
        else if (answer.type === expect) done(undefined, answer as Extract<FromProvider, { type: T }>);
      };
      const onExit = (): void => done(new Error(`the identity provider exited: ${output.slice(-2000)}`));
      function done(error: Error | undefined, answer?: Extract<FromProvider, { type: T }>): void {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (error === undefined) resolve(answer!);
        else reject(error);
      }
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(message);
    });
  }

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let issuer: string;
  try {
    ({ issuer } = await ask({ type: 'start', port, clients, keys: keys.map((k) => k.private), signingKid }, 'started', START_TIMEOUT_MS));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    issuer,
    tokenUrl: `${issuer}/token`,
    jwksUrl: `${issuer}/jwks`,
    pid: child.pid!,
    async token(client, scope) {
      const body = new URLSearchParams({ grant_type: 'client_credentials' });
      if (scope !== undefined) body.set('scope', scope);
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}` },
        body,
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`the token endpoint answered ${response.status}: ${text}`);
      return JSON.parse(text) as TokenResponse;
    },
    keys: () => keys,
    signingKid: () => signingKid,
    async setKeys(next, nextSigningKid) {
      if (!next.some((k) => k.kid === nextSigningKid)) throw new Error(`the signing key ${nextSigningKid} is not among the keys`);
      await ask({ type: 'keys', keys: next.map((k) => k.private), signingKid: nextSigningKid }, 'keys-set');
      keys = next;
      signingKid = nextSigningKid;
    },
    async jwksFetches() {
      return (await ask({ type: 'log' }, 'log')).jwksFetches;
    },
    async tokenRequests() {
      return (await ask({ type: 'log' }, 'log')).tokenRequests;
    },
    stop,
  };
}
