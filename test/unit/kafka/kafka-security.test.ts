import { expect } from 'chai';
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSSASLAuthenticationError } from 'kafkajs';
import { kafkaRefusal } from '../../../src/kafka/kafka-errors.js';
import type { KafkaSecurityConfig } from '../../../src/kafka/kafka-security-config.js';
import { kafkaJsSecurityOptions, kafkaSecurityWarnings } from '../../../src/kafka/kafka-security.js';

const PASSWORD = 'never-print-this-password';
const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const tls = { ca: CA, clientCertificate: undefined, rejectUnauthorized: true };
const scram: KafkaSecurityConfig = { ssl: tls, sasl: { mechanism: 'scram-sha-512', username: 'gateway', password: PASSWORD } };

/** kafkajs's type declares no arguments for this error; kafkajs itself passes the message, as here. */
function saslFailure(message: string): Error {
  return Reflect.construct(KafkaJSSASLAuthenticationError, [message]) as Error;
}

/** What kafkajs throws for a failed TLS connection after its retries: Node's error code two levels down. */
function tlsFailure(code: string, broker = 'kafka-1.example.com:9093'): Error {
  const connection = new KafkaJSConnectionError(`Connection error: ${code}`, { broker, code });
  return new KafkaJSNumberOfRetriesExceeded(connection, { retryCount: 5, retryTime: 3000 });
}

describe('kafkaJsSecurityOptions', () => {
  it('passes TLS trust, the client certificate and SASL credentials to kafkajs', () => {
    const options = kafkaJsSecurityOptions({
      ssl: { ca: CA, clientCertificate: { cert: 'CERT', key: 'KEY' }, rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-256', username: 'gateway', password: PASSWORD },
    });
    expect(options).to.deep.equal({
      ssl: { rejectUnauthorized: true, ca: CA, cert: 'CERT', key: 'KEY' },
      sasl: { mechanism: 'scram-sha-256', username: 'gateway', password: PASSWORD },
    });
  });

  it('keeps Node’s built-in CAs when no CA file is given, and sets nothing for PLAINTEXT', () => {
    expect(kafkaJsSecurityOptions({ ssl: { ...tls, ca: undefined }, sasl: undefined })).to.deep.equal({ ssl: { rejectUnauthorized: true } });
    expect(kafkaJsSecurityOptions({ ssl: undefined, sasl: undefined })).to.deep.equal({});
  });

  it('gives OAUTHBEARER a token provider', () => {
    const options = kafkaJsSecurityOptions({ ssl: tls, sasl: { mechanism: 'oauthbearer', token: { kind: 'file', path: '/dev/null' }, extensions: undefined } });
    expect(options.sasl?.mechanism).to.equal('oauthbearer');
    expect(options.sasl).to.have.property('oauthBearerProvider').that.is.a('function');
  });
});

describe('kafkaSecurityWarnings', () => {
  it('warns of a password or token in clear, and of unchecked certificates; not of SCRAM over TLS', () => {
    expect(kafkaSecurityWarnings(scram)).to.deep.equal([]);
    const plain = kafkaSecurityWarnings({ ssl: undefined, sasl: { mechanism: 'plain', username: 'u', password: PASSWORD } });
    expect(plain.map((w) => w.variable)).to.deep.equal(['KAFKA_SASL_MECHANISM']);
    expect(plain[0]!.message).to.include('in clear').and.not.include(PASSWORD);
    expect(kafkaSecurityWarnings({ ssl: { ...tls, rejectUnauthorized: false }, sasl: undefined }).map((w) => w.variable)).to.deep.equal(['KAFKA_SSL_REJECT_UNAUTHORIZED']);
    const oauthOverHttp = kafkaSecurityWarnings({
      ssl: tls,
      sasl: { mechanism: 'oauthbearer', token: { kind: 'client-credentials', url: 'http://idp/token', clientId: 'c', clientSecret: PASSWORD, scope: undefined }, extensions: undefined },
    });
    expect(oauthOverHttp.map((w) => w.variable)).to.deep.equal(['KAFKA_SASL_OAUTH_TOKEN_URL']);
  });
});

describe('kafkaRefusal', () => {
  it('names a refused password, without user name or password', () => {
    const error = saslFailure(
      'SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
    );
    const reason = kafkaRefusal(error, scram);
    expect(reason).to.equal('authentication failed: the brokers refused the SCRAM-SHA-512 credentials (check KAFKA_SASL_USERNAME and the password)');
    expect(kafkaRefusal(saslFailure('SASL PLAIN mechanism is not supported by the server'), scram)).to.equal(
      'authentication failed: the brokers do not offer SASL SCRAM-SHA-512',
    );
  });

  it('tells an untrusted certificate from a host name mismatch', () => {
    expect(kafkaRefusal(tlsFailure('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), scram)).to.equal(
      "TLS: certificate not trusted: the broker's certificate is not signed by a CA in KAFKA_SSL_CA_FILE",
    );
    expect(kafkaRefusal(tlsFailure('SELF_SIGNED_CERT_IN_CHAIN'), { ...scram, ssl: { ...tls, ca: undefined } })).to.match(/^TLS: certificate not trusted: .*built-in CAs/);
    expect(kafkaRefusal(tlsFailure('ERR_TLS_CERT_ALTNAME_INVALID'), scram)).to.equal(
      `TLS: host name mismatch: the broker's certificate does not name "kafka-1.example.com"`,
    );
    expect(kafkaRefusal(tlsFailure('CERT_HAS_EXPIRED'), scram)).to.match(/expired/);
    expect(kafkaRefusal(tlsFailure('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'), scram)).to.match(/requires a client certificate/);
    expect(kafkaRefusal(tlsFailure('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE'), scram)).to.match(/requires a client certificate/);
    const withCertificate = { ...scram, ssl: { ...tls, clientCertificate: { cert: 'CERT', key: 'KEY' } } };
    expect(kafkaRefusal(tlsFailure('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE'), withCertificate)).to.match(/refused the client certificate/);
  });

  it('names a refused ACL, also inside an aggregate of per-topic errors', () => {
    const denied = Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
    const aggregate = Object.assign(new Error('Topic creation errors'), { errors: [denied] });
    expect(kafkaRefusal(aggregate, scram)).to.match(/^not authorized: the brokers refused access to a topic \(TOPIC_AUTHORIZATION_FAILED\)/);
  });

  it('leaves what retrying may fix to the retries', () => {
    expect(kafkaRefusal(tlsFailure('ECONNREFUSED'), scram)).to.equal(undefined);
    expect(kafkaRefusal(new Error('Request timed out'), scram)).to.equal(undefined);
    expect(kafkaRefusal(undefined, scram)).to.equal(undefined);
  });
});
