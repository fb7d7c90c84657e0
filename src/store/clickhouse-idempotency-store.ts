import type { IdempotencyEntry, IdempotencyKeyRef, IdempotencyStore } from '../commands/idempotency-store.js';
import type { SqlTransport } from './sql-transport.js';

/**
 * Idempotency records in a MergeTree table, for deployments without Keeper: record, then
 * read back the first record for the key. Two gateways that write at the same moment may
 * each read back only their own; the command id derived from the key
 * (src/commands/enroll-device.ts) makes their two commands one for every consumer.
 */
export function createClickHouseIdempotencyStore(transport: SqlTransport): IdempotencyStore {
  const find = async (ref: IdempotencyKeyRef): Promise<IdempotencyEntry | undefined> => {
    const rows = await transport.query<IdempotencyEntry>(
      `SELECT fingerprint, record FROM idempotency_keys
       WHERE org_id = {org_id:UUID} AND scope = {scope:String} AND key = {key:String}
         AND created_at > now64(3) - INTERVAL 1 DAY
       ORDER BY created_at ASC, record ASC
       LIMIT 1`,
      { org_id: ref.orgId, scope: ref.scope, key: ref.key },
    );
    return rows[0];
  };
  return {
    compareAndSet: false,
    async claim(ref, entry) {
      const existing = await find(ref);
      if (existing !== undefined) return existing;
      await transport.insert('idempotency_keys', [
        JSON.stringify({ org_id: ref.orgId, scope: ref.scope, key: ref.key, fingerprint: entry.fingerprint, record: entry.record }),
      ]);
      const first = await find(ref);
      if (first === undefined) throw new Error('an idempotency record just saved is not found');
      return first;
    },
  };
}
