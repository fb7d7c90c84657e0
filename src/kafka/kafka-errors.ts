import { AppError } from '../errors/app-error.js';
import type { KafkaSecurityConfig } from './kafka-security-config.js';

/**
 * The one place kafkajs errors are read. Every failure to get a command acknowledged is
 * a 503: the client may retry (with an Idempotency-Key to stay safe).
 */
export function toKafkaError(error: unknown, operation: string): AppError {
  if (error instanceof AppError) return error;
  return new AppError('UPSTREAM_UNAVAILABLE', `Kafka unavailable during ${operation}`, {
    detail: 'The message broker is temporarily unavailable; retry shortly.',
    cause: error,
  });
}

/** An error and everything it wraps: kafkajs puts a retry error around a connection error around Node's TLS error. */
function* wrapped(error: unknown): Generator<Readonly<Record<string, unknown>>> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === null || typeof next !== 'object' || seen.has(next)) continue;
    seen.add(next);
    const fields = next as Record<string, unknown>;
    yield fields;
    queue.push(fields['cause']);
    if (Array.isArray(fields['errors'])) queue.push(...(fields['errors'] as unknown[]));
  }
}

// Node's codes for a chain that ends at no CA the client trusts.
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
]);
const OUT_OF_DATE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);
const NOT_TLS = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']);

const AUTHORIZATION: Readonly<Record<string, string>> = {
  TOPIC_AUTHORIZATION_FAILED: 'a topic',
  GROUP_AUTHORIZATION_FAILED: 'the consumer group',
  CLUSTER_AUTHORIZATION_FAILED: 'a cluster operation',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'a transactional id',
};

function saslName(security: KafkaSecurityConfig): string {
  return security.sasl === undefined ? 'SASL' : security.sasl.mechanism.toUpperCase();
}

function tlsRefusal(code: string, fields: Readonly<Record<string, unknown>>, security: KafkaSecurityConfig): string | undefined {
  if (UNTRUSTED.has(code)) {
    const trusted = security.ssl?.ca === undefined ? "Node's built-in CAs (set KAFKA_SSL_CA_FILE)" : 'KAFKA_SSL_CA_FILE';
    return `TLS: certificate not trusted: the broker's certificate is not signed by a CA in ${trusted}`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const host = typeof fields['broker'] === 'string' ? fields['broker'].replace(/:\d+$/, '') : undefined;
    return `TLS: host name mismatch: the broker's certificate does not name ${host === undefined ? 'the host connected to' : `"${host}"`}`;
  }
  if (OUT_OF_DATE.has(code)) return "TLS: the broker's certificate has expired or is not valid yet";
  // Java brokers answer a missing client certificate with bad_certificate, not certificate_required.
  const clientAlert = ['_ALERT_CERTIFICATE_REQUIRED', '_ALERT_BAD_CERTIFICATE', '_ALERT_UNKNOWN_CA'].some((alert) => code.endsWith(alert));
  if (clientAlert && security.ssl?.clientCertificate === undefined) {
    return 'TLS: the broker requires a client certificate (KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE)';
  }
  if (clientAlert) return 'TLS: the broker refused the client certificate (KAFKA_SSL_CERT_FILE): not signed by a CA it trusts?';
  if (NOT_TLS.has(code)) return 'TLS: the broker did not answer in TLS (is KAFKA_SSL=true right for this listener?)';
  return undefined;
}

/**
 * Why the brokers refuse this client, when they do: credentials, certificates, host names
 * and ACLs. Retrying does not help with any of these, so the start fails on them at once
 * and /readyz names them. The reason is safe to show anywhere: it never carries a
 * password, a token or a user name, only what is wrong and which settings to check.
 * Undefined for everything else (a broker down, a timeout), which is worth retrying.
 */
export function kafkaRefusal(error: unknown, security: KafkaSecurityConfig): string | undefined {
  for (const fields of wrapped(error)) {
    const name = fields['name'];
    const message = typeof fields['message'] === 'string' ? fields['message'] : '';
    if (name === 'OAuthTokenError') return `authentication failed: no OAuth token: ${message}`;
    if (name === 'KafkaJSSASLAuthenticationError') {
      if (/mechanism is not supported/.test(message)) return `authentication failed: the brokers do not offer SASL ${saslName(security)}`;
      const what = security.sasl?.mechanism === 'oauthbearer' ? 'OAUTHBEARER token' : `${saslName(security)} credentials (check KAFKA_SASL_USERNAME and the password)`;
      return `authentication failed: the brokers refused the ${what}`;
    }
    const code = fields['code'];
    if (typeof code === 'string') {
      const tls = tlsRefusal(code, fields, security);
      if (tls !== undefined) return tls;
    }
    const type = fields['type'];
    if (typeof type === 'string' && AUTHORIZATION[type] !== undefined) {
      return `not authorized: the brokers refused access to ${AUTHORIZATION[type]} (${type}); check this user's ACLs (docs/kafka-contract.md)`;
    }
  }
  return undefined;
}
