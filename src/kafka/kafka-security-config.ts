import { flag, httpUrl, optional, setAmong, type Env } from '../settings/env.js';
import { ConfigError } from '../settings/config-error.js';
import { certificatesFile, fileVariable, privateKeyFile, secretVariable } from '../settings/file-variables.js';

/** TLS to the brokers (KAFKA_SSL=true). PEM texts are read from their files at start. */
export interface KafkaTlsConfig {
  /** CA bundle trusted instead of Node's built-in roots (KAFKA_SSL_CA_FILE); undefined keeps the roots. */
  readonly ca: string | undefined;
  /** Certificate (and chain) and key presented to brokers that ask for one. */
  readonly clientCertificate: { readonly cert: string; readonly key: string } | undefined;
  /** false only when KAFKA_SSL_REJECT_UNAUTHORIZED=false: neither the chain nor the host name is checked. */
  readonly rejectUnauthorized: boolean;
}

export const PASSWORD_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type PasswordMechanism = (typeof PASSWORD_MECHANISMS)[number];

/** Where OAUTHBEARER tokens come from. */
export type OAuthTokenSource =
  /** A file another process keeps fresh; read again for every token the client needs. */
  | { readonly kind: 'file'; readonly path: string }
  /** An OAuth 2.0 token endpoint, asked with the client-credentials grant. */
  | {
      readonly kind: 'client-credentials';
      readonly url: string;
      readonly clientId: string;
      readonly clientSecret: string;
      readonly scope: string | undefined;
    };

export type KafkaSaslConfig =
  | { readonly mechanism: PasswordMechanism; readonly username: string; readonly password: string }
  | {
      readonly mechanism: 'oauthbearer';
      readonly token: OAuthTokenSource;
      /** SASL extensions sent with each token; some services require them, e.g. the logical cluster. */
      readonly extensions: Readonly<Record<string, string>> | undefined;
    };

export interface KafkaSecurityConfig {
  readonly ssl: KafkaTlsConfig | undefined;
  readonly sasl: KafkaSaslConfig | undefined;
}

const TLS_DETAILS = ['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_REJECT_UNAUTHORIZED'];
const PASSWORD_VARIABLES = ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE'];
const CLIENT_CREDENTIALS_VARIABLES = [
  'KAFKA_SASL_OAUTH_CLIENT_ID',
  'KAFKA_SASL_OAUTH_CLIENT_SECRET',
  'KAFKA_SASL_OAUTH_CLIENT_SECRET_FILE',
  'KAFKA_SASL_OAUTH_SCOPE',
];
const OAUTH_VARIABLES = ['KAFKA_SASL_OAUTH_TOKEN_FILE', 'KAFKA_SASL_OAUTH_TOKEN_URL', ...CLIENT_CREDENTIALS_VARIABLES, 'KAFKA_SASL_OAUTH_EXTENSIONS'];

function refuseAny(env: Env, names: readonly string[], problem: string): void {
  const [first] = setAmong(env, names);
  if (first !== undefined) throw new ConfigError(first, problem);
}

function parseTls(env: Env): KafkaTlsConfig | undefined {
  if (!flag(env, 'KAFKA_SSL', false)) {
    refuseAny(env, TLS_DETAILS, 'applies only with KAFKA_SSL=true');
    return undefined;
  }
  const certSet = optional(env, 'KAFKA_SSL_CERT_FILE') !== undefined;
  const keySet = optional(env, 'KAFKA_SSL_KEY_FILE') !== undefined;
  if (certSet !== keySet) {
    const [missing, given] = certSet ? ['KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_CERT_FILE'] : ['KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE'];
    throw new ConfigError(missing, `is required with ${given}: a client certificate goes with its key`);
  }
  const ca = certificatesFile(env, 'KAFKA_SSL_CA_FILE');
  const cert = certificatesFile(env, 'KAFKA_SSL_CERT_FILE');
  const key = privateKeyFile(env, 'KAFKA_SSL_KEY_FILE');
  if (cert !== undefined && key !== undefined && !cert.first.checkPrivateKey(key.key)) {
    throw new ConfigError('KAFKA_SSL_KEY_FILE', 'is not the key of the certificate in KAFKA_SSL_CERT_FILE');
  }
  return {
    ca: ca?.pem,
    clientCertificate: cert !== undefined && key !== undefined ? { cert: cert.pem, key: key.pem } : undefined,
    rejectUnauthorized: flag(env, 'KAFKA_SSL_REJECT_UNAUTHORIZED', true),
  };
}

/** key=value pairs separated by commas; keys are letters only (RFC 7628), and "auth" is the token's own. */
function parseExtensions(env: Env): Record<string, string> | undefined {
  const raw = optional(env, 'KAFKA_SASL_OAUTH_EXTENSIONS');
  if (raw === undefined) return undefined;
  const extensions: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const match = /^\s*([A-Za-z]+)=([\x21-\x7e]+)\s*$/.exec(pair);
    if (match === null) throw new ConfigError('KAFKA_SASL_OAUTH_EXTENSIONS', 'must be key=value pairs separated by commas, keys of letters only');
    const key = match[1]!;
    const value = match[2]!;
    if (key === 'auth') throw new ConfigError('KAFKA_SASL_OAUTH_EXTENSIONS', '"auth" is reserved for the token itself');
    extensions[key] = value;
  }
  return extensions;
}

function parseOAuth(env: Env): KafkaSaslConfig {
  refuseAny(env, PASSWORD_VARIABLES, 'applies only with KAFKA_SASL_MECHANISM plain, scram-sha-256 or scram-sha-512');
  const tokenFile = optional(env, 'KAFKA_SASL_OAUTH_TOKEN_FILE');
  const tokenUrl = optional(env, 'KAFKA_SASL_OAUTH_TOKEN_URL');
  if (tokenFile !== undefined && tokenUrl !== undefined) {
    throw new ConfigError('KAFKA_SASL_OAUTH_TOKEN_FILE, KAFKA_SASL_OAUTH_TOKEN_URL', 'set only one way to get tokens');
  }
  const extensions = parseExtensions(env);
  if (tokenFile !== undefined) {
    refuseAny(env, CLIENT_CREDENTIALS_VARIABLES, 'applies only with KAFKA_SASL_OAUTH_TOKEN_URL');
    // Read now so that a wrong path stops the start; read again for every token later.
    if (fileVariable(env, 'KAFKA_SASL_OAUTH_TOKEN_FILE')!.trim() === '') throw new ConfigError('KAFKA_SASL_OAUTH_TOKEN_FILE', `${tokenFile} is empty`);
    return { mechanism: 'oauthbearer', token: { kind: 'file', path: tokenFile }, extensions };
  }
  if (tokenUrl === undefined) {
    throw new ConfigError('KAFKA_SASL_OAUTH_TOKEN_URL', 'or KAFKA_SASL_OAUTH_TOKEN_FILE is required with KAFKA_SASL_MECHANISM=oauthbearer');
  }
  const url = httpUrl('KAFKA_SASL_OAUTH_TOKEN_URL', tokenUrl);
  const clientId = optional(env, 'KAFKA_SASL_OAUTH_CLIENT_ID');
  if (clientId === undefined) throw new ConfigError('KAFKA_SASL_OAUTH_CLIENT_ID', 'is required with KAFKA_SASL_OAUTH_TOKEN_URL');
  const clientSecret = secretVariable(env, 'KAFKA_SASL_OAUTH_CLIENT_SECRET');
  if (clientSecret === undefined) {
    throw new ConfigError('KAFKA_SASL_OAUTH_CLIENT_SECRET', 'or KAFKA_SASL_OAUTH_CLIENT_SECRET_FILE is required with KAFKA_SASL_OAUTH_TOKEN_URL');
  }
  return {
    mechanism: 'oauthbearer',
    token: { kind: 'client-credentials', url: url.toString(), clientId, clientSecret, scope: optional(env, 'KAFKA_SASL_OAUTH_SCOPE') },
    extensions,
  };
}

function parseSasl(env: Env): KafkaSaslConfig | undefined {
  const raw = optional(env, 'KAFKA_SASL_MECHANISM');
  if (raw === undefined) {
    const given = setAmong(env, [...PASSWORD_VARIABLES, ...OAUTH_VARIABLES]);
    if (given.length > 0) throw new ConfigError('KAFKA_SASL_MECHANISM', `is required when ${given.join(', ')} ${given.length === 1 ? 'is' : 'are'} set`);
    return undefined;
  }
  const mechanism = raw.toLowerCase();
  if (mechanism === 'oauthbearer') return parseOAuth(env);
  if (!(PASSWORD_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new ConfigError('KAFKA_SASL_MECHANISM', `must be plain, scram-sha-256, scram-sha-512 or oauthbearer, got "${raw}"`);
  }
  refuseAny(env, OAUTH_VARIABLES, 'applies only with KAFKA_SASL_MECHANISM=oauthbearer');
  const username = optional(env, 'KAFKA_SASL_USERNAME');
  if (username === undefined) throw new ConfigError('KAFKA_SASL_USERNAME', `is required with KAFKA_SASL_MECHANISM=${mechanism}`);
  const password = secretVariable(env, 'KAFKA_SASL_PASSWORD');
  if (password === undefined) {
    throw new ConfigError('KAFKA_SASL_PASSWORD', `or KAFKA_SASL_PASSWORD_FILE is required with KAFKA_SASL_MECHANISM=${mechanism}`);
  }
  return { mechanism: mechanism as PasswordMechanism, username, password };
}

/**
 * TLS and SASL towards the brokers. The settings apply only with KAFKA_BROKERS: set
 * without it they would be silently ignored by the in-process bus, so that is an error.
 */
export function parseKafkaSecurity(env: Env, withBrokers: boolean): KafkaSecurityConfig {
  if (!withBrokers) {
    refuseAny(env, ['KAFKA_SSL', ...TLS_DETAILS, 'KAFKA_SASL_MECHANISM', ...PASSWORD_VARIABLES, ...OAUTH_VARIABLES], 'applies only with KAFKA_BROKERS');
    return { ssl: undefined, sasl: undefined };
  }
  return { ssl: parseTls(env), sasl: parseSasl(env) };
}
