import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startRuntime } from './runtime/gateway-runtime.js';

/** Process entry: configuration once, then the runtime; SIGINT/SIGTERM shut it down gracefully. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`core-gateway: invalid configuration: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const runtime = await startRuntime(config, logger);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    runtime.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('core-gateway: failed to start:', error);
  process.exit(1);
});
