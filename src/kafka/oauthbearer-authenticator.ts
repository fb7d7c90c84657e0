import kafkajs, { type AuthenticationProviderArgs, type Authenticator } from 'kafkajs';
import type { OAuthToken, OAuthTokenProvider } from './oauth-token-provider.js';

/**
 * kafkajs's class, so kafkajs treats the failure as its own (not retriable). It is reached
 * through the default export because kafkajs spreads its errors into module.exports, which
 * Node cannot see as named exports; its typings omit the message its constructor takes.
 */
const SaslAuthenticationError = kafkajs.KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;

/** The separator of RFC 7628's key/value pairs (US-ASCII SOH). */
const SOH = '\u0001';

/** SASL bytes travel as a Kafka BYTES field: a 32-bit big-endian length, then the bytes. */
function kafkaBytes(payload: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(payload.length);
  return Buffer.concat([length, payload]);
}

function fromKafkaBytes(field: Buffer): Buffer {
  if (field.length < 4) return Buffer.alloc(0);
  const length = field.readInt32BE(0);
  return length <= 0 ? Buffer.alloc(0) : field.subarray(4, 4 + length);
}

/** The client's initial response (RFC 7628, 3.1), with SASL extensions as Kafka reads them (KIP-342). */
export function clientInitialResponse(token: OAuthToken): Buffer {
  const extensions = Object.entries(token.extensions ?? {}).map(([key, value]) => `${SOH}${key}=${value}`).join('');
  return Buffer.from(`n,,${SOH}auth=Bearer ${token.value}${extensions}${SOH}${SOH}`);
}

/** The `status` of a server's error challenge (RFC 7628, 3.2.2), when it has a plain one. */
export function challengeStatus(challenge: Buffer): string | undefined {
  try {
    const status = (JSON.parse(challenge.toString('utf8')) as { status?: unknown }).status;
    return typeof status === 'string' && /^[a-z_]{1,64}$/.test(status) ? status : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The OAUTHBEARER exchange, done as RFC 7628 says. kafkajs's own takes any answer to the
 * token as success. A broker that refuses the token instead answers with an error
 * challenge and waits for the client to end the exchange with a lone SOH; kafkajs sends
 * its next request instead, the broker drops the connection for that, and the refusal
 * reaches the gateway as "no brokers", cause lost. Here the challenge is read, the
 * exchange ended, and the login fails as a SASL authentication error (which
 * src/kafka/kafka-errors.ts names) carrying the broker's status, never the token.
 */
export function oauthBearerAuthenticator(provider: OAuthTokenProvider): (args: AuthenticationProviderArgs) => Authenticator {
  return ({ saslAuthenticate }) => ({
    async authenticate() {
      const token = await provider();
      const challenge = await saslAuthenticate<Buffer>({
        request: { encode: () => kafkaBytes(clientInitialResponse(token)) },
        response: { decode: (raw) => fromKafkaBytes(raw), parse: (data) => data },
      });
      if (challenge === undefined || challenge.length === 0) return;
      const status = challengeStatus(challenge);
      // The broker answers the closing SOH with SASL_AUTHENTICATION_FAILED; the challenge already said why.
      await saslAuthenticate({ request: { encode: () => kafkaBytes(Buffer.from(SOH)) } }).catch(() => undefined);
      throw new SaslAuthenticationError(`SASL OAUTHBEARER authentication failed: the broker refused the token${status === undefined ? '' : ` (${status})`}`);
    },
  });
}
