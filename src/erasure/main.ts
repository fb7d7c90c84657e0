import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../config/config.js';
import { setAmong, type Env } from '../settings/env.js';
import { createLogger } from '../observability/logger.js';
import { openStore, storeLayout } from '../runtime/store-runtime.js';
import { createErasureStore } from '../store/clickhouse-erasure.js';
import { runErasure } from '../store/erasure-run.js';
import { ERASE_USAGE, EraseUsageError, parseEraseArguments, type EraseCommand } from './erase-arguments.js';
import { auditReport, progressLine } from './erase-progress.js';

/** The variables by which a gateway verifies tokens (src/auth/auth-settings.ts). */
const AUTH_WAYS = ['AUTH_JWT_SECRET', 'AUTH_JWT_SECRET_FILE', 'AUTH_JWKS_URL', 'AUTH_PUBLIC_KEY', 'AUTH_OIDC_ISSUER'];

/**
 * The command verifies no token, but the gateway's configuration refuses a ClickHouse server
 * without a way to verify them: where the environment names none, a throwaway secret stands
 * in, so an operator's shell needs only the store's variables. One that is set is checked as
 * the gateway checks it.
 */
function withTokenSettings(env: Env): Env {
  return setAmong(env, AUTH_WAYS).length > 0 ? env : { ...env, AUTH_JWT_SECRET: randomBytes(32).toString('hex') };
}

/**
 * The operator's erasure command (docs/decisions/erasure.md): an operator's process with the
 * gateway's own store settings, not an HTTP route, so no token can erase a tenant and the
 * audit names the operator who ran it. Progress goes to stderr, the audit record to stdout.
 */
async function main(args: readonly string[]): Promise<number> {
  let command: EraseCommand;
  let config;
  try {
    command = parseEraseArguments(args);
    if (command.kind === 'help') {
      console.log(ERASE_USAGE);
      return 0;
    }
    config = loadConfig(withTokenSettings(process.env));
  } catch (error) {
    if (error instanceof EraseUsageError) {
      console.error(`erase: ${error.message}\n${ERASE_USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError) {
      console.error(`erase: invalid configuration: ${error.message}`);
      return 2;
    }
    throw error;
  }
  const logger = createLogger(process.env['LOG_LEVEL'] ?? 'warn', process.stderr);
  // The gateway's own opening: the tables migrated, the erasures table among them.
  const transport = await openStore(config);
  const store = await createErasureStore({ transport, layout: storeLayout(config), clickhouse: config.clickhouse });
  try {
    const outcome = await runErasure(command, {
      store,
      settings: config.erasure,
      progress: (step) => console.error(progressLine(step)),
      inFlightMs: config.clickhouse?.requestTimeoutMs,
    });
    console.log(auditReport(outcome.record, outcome));
    return 0;
  } catch (error) {
    logger.error({ err: error }, 'erasure stopped; run the same command again to resume it');
    return 1;
  } finally {
    await store.close();
    await transport.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('erase: failed:', error);
    process.exit(1);
  },
);
