/**
 * Mints an HS256 bearer token for the embedded default (or any AUTH_JWT_SECRET deployment).
 *   npm run token -- --org <uuid> [--org <uuid>] [--scope "events:read devices:enroll"] [--sub name] [--ttl seconds]
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { signHs256Token } from '../src/auth/sign-token.js';
import { permissions } from '../src/auth/principal.js';
import { loadConfig } from '../src/config/config.js';
import { DEV_SECRET_FILE } from '../src/runtime/auth-runtime.js';
import { loadOrCreateSecret } from '../src/runtime/secrets.js';

const { values } = parseArgs({
  options: {
    org: { type: 'string', multiple: true },
    scope: { type: 'string', default: permissions.join(' ') },
    sub: { type: 'string', default: 'developer' },
    ttl: { type: 'string', default: '3600' },
  },
});
if (values.org === undefined || values.org.length === 0) {
  console.error(`usage: npm run token -- --org <org-uuid> [--scope "${permissions.join(' ')}"] [--sub name] [--ttl seconds]`);
  process.exit(2);
}
const config = loadConfig(process.env);
let secret: string;
if (config.auth.kind === 'hs256') secret = config.auth.secret;
else if (config.auth.kind === 'development') secret = loadOrCreateSecret(resolve(config.dataDir, DEV_SECRET_FILE)).secret;
else {
  console.error('npm run token mints HS256 tokens only: set AUTH_JWT_SECRET, or leave every AUTH_* variable unset for the embedded default.');
  process.exit(2);
}
const token = await signHs256Token(secret, {
  sub: values.sub,
  orgIds: values.org,
  scopes: values.scope.split(' ').filter((s) => s !== ''),
  issuer: config.issuer,
  audience: config.audience,
  ttlSeconds: Number(values.ttl),
});
console.log(token);
