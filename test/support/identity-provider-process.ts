/**
 * A real OpenID Connect provider (npm oidc-provider, an OpenID-certified implementation)
 * as a process of its own on loopback, for the integration suites. It issues JWT access
 * tokens by the client-credentials grant, carrying the product's claims (`org_ids`,
 * `scope`), signed with keys it publishes at its JWKS endpoint and names in its
 * discovery document. test/support/identity-provider.ts starts it and steers it over IPC:
 *
 *   parent → { type: 'start', port, clients, keys, signingKid }   child → { type: 'started', issuer }
 *   parent → { type: 'keys', keys, signingKid }                    child → { type: 'keys-set' }
 *   parent → { type: 'log' }                                       child → { type: 'log', jwksFetches, tokenRequests }
 *
 * A key change builds a new Provider on the same listening socket, as a provider's
 * operator rolls out a new key set: requests never see the port closed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Provider, { errors, type ClientMetadata, type Configuration, type JWK } from 'oidc-provider';
import { permissions } from '../../src/auth/principal.js';

/** A client of the provider, allowed the client-credentials grant only. */
export interface IdentityProviderClient {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The `aud` of every token it gets: the resource server (gateway, broker) it is meant for. */
  readonly audience: string;
  /** Scopes it may ask for; a token carries those it asked for. */
  readonly scope: string;
  /** Organizations its tokens name in `org_ids`; none for a client that calls no HTTP API (a Kafka client). */
  readonly orgIds?: readonly string[];
  /** Access token lifetime in seconds. */
  readonly tokenTtlS: number;
}

export type ToProvider =
  | {
      readonly type: 'start';
      readonly port: number;
      readonly clients: readonly IdentityProviderClient[];
      readonly keys: readonly JWK[];
      readonly signingKid: string;
    }
  | { readonly type: 'keys'; readonly keys: readonly JWK[]; readonly signingKid: string }
  | { readonly type: 'log' };

/** One request for the key set: when, and by whom (the broker's Java client names itself "Java/…"). */
export interface JwksFetch {
  readonly at: number;
  readonly userAgent: string;
}

/** One answer of the token endpoint: to which client, with which key its token was signed. */
export interface TokenRequest {
  readonly at: number;
  readonly clientId: string;
  readonly status: number;
  readonly signingKid: string;
}

export type FromProvider =
  | { readonly type: 'started'; readonly issuer: string }
  | { readonly type: 'keys-set' }
  | { readonly type: 'log'; readonly jwksFetches: readonly JwksFetch[]; readonly tokenRequests: readonly TokenRequest[] }
  | { readonly type: 'failed'; readonly message: string };

const SCOPES = [...permissions, 'kafka'];

interface Settings {
  readonly issuer: string;
  readonly clients: readonly IdentityProviderClient[];
  readonly keys: readonly JWK[];
  readonly signingKid: string;
}

function buildProvider(settings: Settings): Provider {
  const byId = new Map(settings.clients.map((c) => [c.clientId, c]));
  const clientOf = (id: string): IdentityProviderClient => {
    const client = byId.get(id);
    if (client === undefined) throw new errors.InvalidClient('unknown client');
    return client;
  };
  const clients: ClientMetadata[] = settings.clients.map((c) => ({
    client_id: c.clientId,
    client_secret: c.clientSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: c.scope,
  }));
  const configuration: Configuration = {
    clients,
    jwks: { keys: [...settings.keys] },
    scopes: SCOPES,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Our clients name no `resource`: each client's tokens are for the one audience it is registered for.
        defaultResource: (_ctx, client) => clientOf(client.clientId).audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator, client) => {
          const registered = clientOf(client.clientId);
          if (indicator !== registered.audience) throw new errors.InvalidTarget();
          return {
            scope: registered.scope,
            audience: indicator,
            accessTokenTTL: registered.tokenTtlS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256', kid: settings.signingKid } },
          };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const clientId = 'clientId' in token && typeof token.clientId === 'string' ? token.clientId : undefined;
      const orgIds = clientId === undefined ? undefined : byId.get(clientId)?.orgIds;
      return orgIds === undefined ? undefined : { org_ids: [...orgIds] };
    },
  };
  return new Provider(settings.issuer, configuration);
}

function send(message: FromProvider): void {
  process.send?.(message);
}

let settings: Settings | undefined;
let handler: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | undefined;
const jwksFetches: JwksFetch[] = [];
const tokenRequests: TokenRequest[] = [];

/** The client id of HTTP Basic client authentication (RFC 6749, 2.3.1), or '' when there is none. */
function basicClientId(authorization: string | undefined): string {
  const encoded = /^Basic (.+)$/i.exec(authorization ?? '')?.[1];
  if (encoded === undefined) return '';
  const decoded = Buffer.from(encoded, 'base64').toString();
  const id = decoded.slice(0, Math.max(decoded.indexOf(':'), 0)).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(id);
  } catch {
    // Malformed escapes: the provider refuses the client anyway; the log keeps what was sent.
    return id;
  }
}

function install(next: Settings): void {
  const provider = buildProvider(next);
  // A fault inside the provider answers 500; its cause belongs in the test's output.
  provider.on('server_error', (_ctx, error) => console.error(`identity provider: ${error.message}`));
  handler = provider.callback();
  settings = next;
}

const server = createServer((req, res) => {
  const at = Date.now();
  if (req.url?.startsWith('/jwks') === true) jwksFetches.push({ at, userAgent: req.headers['user-agent'] ?? '' });
  if (req.url?.startsWith('/token') === true && settings !== undefined) {
    const { signingKid } = settings;
    const clientId = basicClientId(req.headers.authorization);
    res.once('finish', () => tokenRequests.push({ at, clientId, status: res.statusCode, signingKid }));
  }
  if (handler === undefined) {
    res.writeHead(503).end();
    return;
  }
  // Koa answers its own failures (500, and the server_error event above).
  void handler(req, res);
});

process.on('message', (message: ToProvider) => {
  try {
    switch (message.type) {
      case 'start': {
        const issuer = `http://127.0.0.1:${message.port}`;
        install({ issuer, clients: message.clients, keys: message.keys, signingKid: message.signingKid });
        server.once('error', (error) => send({ type: 'failed', message: error.message }));
        server.listen(message.port, '127.0.0.1', () => send({ type: 'started', issuer }));
        break;
      }
      case 'keys':
        if (settings === undefined) throw new Error('not started');
        install({ ...settings, keys: message.keys, signingKid: message.signingKid });
        send({ type: 'keys-set' });
        break;
      case 'log':
        send({ type: 'log', jwksFetches, tokenRequests });
        break;
    }
  } catch (error) {
    send({ type: 'failed', message: (error as Error).message });
  }
});

// The parent going away (a test run killed) must not leave the provider listening.
process.on('disconnect', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
