import { ConfigError, loadConfig } from '../../src/config/config.js';

/** The ConfigError a start with `env` stops on; fails the test when the configuration loads, or fails otherwise. */
export function configRefusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}
