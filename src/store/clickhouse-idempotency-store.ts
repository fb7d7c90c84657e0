import type { IdempotencyEntry, IdempotencyKeyRef, IdempotencyStore } from '../commands/idempotency-store.js';
import type { SqlTransport } from './sql-transport.js';

export function createClickHouseIdempotencyStore(transport: SqlTransport): IdempotencyStore {
  return {
    async find(ref: IdempotencyKeyRef) {
      const rows = await transport.query<IdempotencyEntry>(
        `SELECT fingerprint, record FROM idempotency_keys
         WHERE org_id = {org_id:UUID} AND scope = {scope:String} AND key = {key:String}
           AND created_at > now64(3) - INTERVAL 1 DAY
         ORDER BY created_at ASC, record ASC
         LIMIT 1`,
        { org_id: ref.orgId, scope: ref.scope, key: ref.key },
      );
      return rows[0];
    },
    async save(ref: IdempotencyKeyRef, entry: IdempotencyEntry) {
      await transport.insert('idempotency_keys', [
        { org_id: ref.orgId, scope: ref.scope, key: ref.key, fingerprint: entry.fingerprint, record: entry.record },
      ]);
    },
  };
}
