import { ConfigError, loadConfig } from './config/config.js';
import { createLogger } from './observability/logger.js';
import { startRuntime } from './runtime/gateway-runtime.js';
import { StartupError } from './errors/startup-error.js';

// After the HTTP drain: the producer's last acknowledgements, the consumer's last batch and commit, the store.
const SHUTDOWN_FLUSH_BOUND_MS = 30_000;

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
    const started = Date.now();
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down');
    // Each step of close() is bounded; this bounds their sum, should one of them hang anyway.
    const deadline = setTimeout(() => {
      logger.error({ afterMs: Date.now() - started }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + SHUTDOWN_FLUSH_BOUND_MS);
    deadline.unref();
    runtime.close().then(
      () => {
        logger.info({ signal, durationMs: Date.now() - started }, 'stopped');
        process.exit(0);
      },
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
  if (error instanceof StartupError) {
    // A refusal the operator must fix (credentials, certificates, ACLs): one line says it all.
    console.error(`core-gateway: failed to start: ${error.message}`);
    process.exit(1);
  }
  console.error('core-gateway: failed to start:', error);
  process.exit(1);
});
