import type { ConnectionOptions } from 'node:tls';
import type { Mechanism, SASLOptions } from 'kafkajs';
import type { KafkaSaslConfig, KafkaSecurityConfig, KafkaTlsConfig } from './kafka-security-config.js';
import { createOAuthTokenProvider } from './oauth-token-provider.js';
import { oauthBearerAuthenticator } from './oauthbearer-authenticator.js';

/** The `ssl` and `sasl` options of a kafkajs client; both absent is PLAINTEXT. */
export interface KafkaJsSecurityOptions {
  readonly ssl?: ConnectionOptions;
  readonly sasl?: SASLOptions | Mechanism;
}

function tlsOptions(tls: KafkaTlsConfig): ConnectionOptions {
  return {
    // kafkajs passes these to tls.connect, which checks the chain and, for a name, the host name too.
    rejectUnauthorized: tls.rejectUnauthorized,
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    ...(tls.clientCertificate === undefined ? {} : { cert: tls.clientCertificate.cert, key: tls.clientCertificate.key }),
  };
}

function saslOptions(sasl: KafkaSaslConfig): SASLOptions | Mechanism {
  switch (sasl.mechanism) {
    case 'oauthbearer': {
      const oauthBearerProvider = createOAuthTokenProvider(sasl.token, sasl.extensions);
      // kafkajs uses authenticationProvider when set: ours ends a refused exchange as RFC 7628 asks.
      const options: Extract<SASLOptions, { mechanism: 'oauthbearer' }> & Mechanism = { mechanism: 'oauthbearer', oauthBearerProvider, authenticationProvider: oauthBearerAuthenticator(oauthBearerProvider) };
      return options;
    }
    case 'plain':
      return { mechanism: 'plain', username: sasl.username, password: sasl.password };
    case 'scram-sha-256':
      return { mechanism: 'scram-sha-256', username: sasl.username, password: sasl.password };
    case 'scram-sha-512':
      return { mechanism: 'scram-sha-512', username: sasl.username, password: sasl.password };
  }
}

export function kafkaJsSecurityOptions(security: KafkaSecurityConfig): KafkaJsSecurityOptions {
  return {
    ...(security.ssl === undefined ? {} : { ssl: tlsOptions(security.ssl) }),
    ...(security.sasl === undefined ? {} : { sasl: saslOptions(security.sasl) }),
  };
}

export interface SecurityWarning {
  readonly variable: string;
  readonly message: string;
}

/** Settings that work but leave a credential or the cluster's identity unprotected; logged once at start. */
export function kafkaSecurityWarnings(security: KafkaSecurityConfig): SecurityWarning[] {
  const warnings: SecurityWarning[] = [];
  if (security.ssl?.rejectUnauthorized === false) {
    warnings.push({
      variable: 'KAFKA_SSL_REJECT_UNAUTHORIZED',
      message: "TLS without checking the brokers' certificates or host names: anyone on the path can pose as the cluster",
    });
  }
  const sasl = security.sasl;
  if (sasl !== undefined && security.ssl === undefined && (sasl.mechanism === 'plain' || sasl.mechanism === 'oauthbearer')) {
    warnings.push({
      variable: 'KAFKA_SASL_MECHANISM',
      message: `SASL ${sasl.mechanism.toUpperCase()} without KAFKA_SSL=true: the ${sasl.mechanism === 'plain' ? 'password' : 'token'} crosses the network in clear`,
    });
  }
  if (sasl?.mechanism === 'oauthbearer' && sasl.token.kind === 'client-credentials' && sasl.token.url.startsWith('http:')) {
    warnings.push({ variable: 'KAFKA_SASL_OAUTH_TOKEN_URL', message: 'the OAuth client secret goes to the token endpoint over plain http' });
  }
  return warnings;
}
