import type { IdempotencyEntry, IdempotencyKeyRef, IdempotencyStore } from '../commands/idempotency-store.js';
import type { SqlTransport } from './sql-transport.js';
import { storeNotSettled } from './store-errors.js';

/**
 * An acknowledgement is a row of its own under the key: the table is append-only. Its
 * record starts with this, which no claim's record (a JSON object) does, and sorts after
 * `{`, so a gateway that knows nothing of acknowledgements still reads the claim first.
 */
const ACK_PREFIX = '~ack:';

interface Row {
  readonly fingerprint: string;
  readonly record: string;
  readonly created_text: string;
  readonly age_ms: number | string;
}

/**
 * Idempotency records in a MergeTree table, for deployments without Keeper: record, then
 * read back the first record for the key. Two gateways that write at the same moment may
 * each read back only their own; the command id derived from the key
 * (src/commands/command-handler.ts) makes their two commands one for every consumer.
 */
export function createClickHouseIdempotencyStore(transport: SqlTransport): IdempotencyStore {
  const find = async (ref: IdempotencyKeyRef): Promise<IdempotencyEntry | undefined> => {
    // A key has its claim, the claims of gateways that raced it, and their acknowledgements: a handful of rows.
    const rows = await transport.query<Row>(
      `SELECT fingerprint, record, toString(created_at) AS created_text, dateDiff('millisecond', created_at, now64(3)) AS age_ms FROM idempotency_keys
       WHERE org_id = {org_id:UUID} AND scope = {scope:String} AND key = {key:String}
         AND created_at > now64(3) - INTERVAL 1 DAY
       ORDER BY created_at ASC, record ASC
       LIMIT 100`,
      { org_id: ref.orgId, scope: ref.scope, key: ref.key },
    );
    const first = rows.find((r) => !r.record.startsWith(ACK_PREFIX));
    if (first === undefined) return undefined;
    // Same-width UTC text, so it compares as the times do.
    const ack = rows.find((r) => r.record.startsWith(ACK_PREFIX) && r.fingerprint === first.fingerprint && r.created_text >= first.created_text);
    return { fingerprint: first.fingerprint, record: first.record, ack: ack?.record.slice(ACK_PREFIX.length), ageMs: Number(first.age_ms) };
  };
  const insert = (ref: IdempotencyKeyRef, fingerprint: string, record: string): Promise<void> =>
    transport.insert('idempotency_keys', [JSON.stringify({ org_id: ref.orgId, scope: ref.scope, key: ref.key, fingerprint, record })]);
  return {
    compareAndSet: false,
    async claim(ref, entry) {
      const existing = await find(ref);
      if (existing !== undefined) return existing;
      await insert(ref, entry.fingerprint, entry.record);
      const first = await find(ref);
      if (first === undefined) throw storeNotSettled('idempotency store', 'an Idempotency-Key claim', 'the record just saved is not found');
      return first;
    },
    acknowledge(ref, fingerprint, ack) {
      return insert(ref, fingerprint, `${ACK_PREFIX}${ack}`);
    },
  };
}
