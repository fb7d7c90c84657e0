import { AppError } from '../errors/app-error.js';
import type { SqlParams, SqlTransport } from './sql-transport.js';

/**
 * Times a maintenance statement (a partition dropped, rows deleted) is asked before its
 * caller is told it failed. Such a statement waits for what the server is doing with the
 * data it touches (merges, earlier mutations), and on a busy server may outlast the
 * client's request timeout, which is set for requests' reads, while the server goes on
 * with it.
 */
export const COMMAND_TRIES = 3;

/**
 * Runs a statement that does the same however often it runs, asking it again at once when
 * the store did not answer (timed out, unreachable); any other failure is the caller's.
 * Only for statements whose repeat is harmless: a drop of a partition already gone, a
 * delete of rows already deleted.
 */
export async function idempotentCommand(transport: Pick<SqlTransport, 'command'>, sql: string, params?: SqlParams): Promise<void> {
  for (let tried = 1; ; tried++) {
    try {
      await transport.command(sql, params);
      return;
    } catch (error) {
      if (tried >= COMMAND_TRIES || !(error instanceof AppError && error.code === 'UPSTREAM_UNAVAILABLE')) throw error;
    }
  }
}
