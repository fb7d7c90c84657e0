import { resolve } from 'node:path';
import type { Config } from '../config/config.js';
import { createTokenVerifier, type TokenVerifier, type VerificationKey } from '../auth/token-verifier.js';
import type { Logger } from '../observability/logger.js';
import { loadOrCreateSecret } from './secrets.js';
import { permissions } from '../auth/principal.js';

export const DEV_SECRET_FILE = 'dev-jwt-secret';

export function createVerifier(config: Config, logger: Logger): TokenVerifier {
  let key: VerificationKey;
  if (config.auth.kind === 'development') {
    const file = resolve(config.dataDir, DEV_SECRET_FILE);
    const { secret, created } = loadOrCreateSecret(file);
    key = { kind: 'hs256', secret };
    logger.warn(
      { file, created },
      'no AUTH_* variable set: verifying HS256 tokens with a development secret. ' +
        `Mint one with: npm run token -- --org <org-uuid> --scope "${permissions.join(' ')}"`,
    );
  } else {
    key = config.auth;
  }
  return createTokenVerifier({
    key,
    issuer: config.issuer,
    audience: config.audience,
    clockToleranceSeconds: config.clockToleranceSeconds,
    maxLifetimeSeconds: config.tokens.maxLifetimeSeconds,
    tokenType: config.tokens.type,
  });
}
