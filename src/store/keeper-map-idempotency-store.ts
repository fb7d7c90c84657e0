import type { IdempotencyEntry, IdempotencyKeyRef, IdempotencyStore } from '../commands/idempotency-store.js';
import type { SqlTransport } from './sql-transport.js';
import { isKeeperFailure, isKeeperKeyTaken, storeNotSettled } from './store-errors.js';

export interface KeeperMapIdempotencyOptions {
  /** How long a key's record holds, in seconds (default: a day, as the API promises). */
  readonly windowSeconds?: number;
  /** The current time, for the sweep's schedule only; records age by the server's clock. */
  readonly now?: () => number;
}

const DAY_SECONDS = 86_400;

interface HeldRow {
  readonly fingerprint: string;
  readonly record: string;
  readonly created_text: string;
  readonly live: number;
  readonly age_ms: number | string;
}

/** The key of a claim's acknowledgement: the claim is a JSON array, so no claim ends like this. */
const ackName = (claim: string): string => `${claim}#ack`;

// A server whose Keeper session dropped ("Connection loss") reconnects by itself; a claim
// retried after it is safe, since a claim that did land makes the retry read it back.
const KEEPER_RETRY_DELAYS_MS = [100, 250, 500, 1000, 2000];

// A failed or overlapping sweep costs nothing but Keeper nodes; expired records are ignored on read.
const SWEEP_EVERY_MS = 3_600_000;

/**
 * The statement that creates the claims table: a KeeperMap, whose rows live in the
 * servers' Keeper or ZooKeeper under the path given here, so every server (and every
 * gateway) that creates it with the same path shares one map. Needs
 * `keeper_map_path_prefix` in the server's config; the path is under it.
 */
export function keeperMapTableStatement(database: string): string {
  return `CREATE TABLE IF NOT EXISTS idempotency_claims (
    claim String,
    fingerprint String,
    record String,
    created_at DateTime64(3, 'UTC')
  ) ENGINE = KeeperMap('/core_gateway/${database}/idempotency_claims')
  PRIMARY KEY claim`;
}

/**
 * Idempotency records with a compare-and-set: an INSERT with keeper_map_strict_mode = 1
 * creates the key's node in Keeper or fails because it exists, atomically, whichever
 * server or gateway asks. The loser reads the winner's record. A record older than the
 * window is deleted under the same strict mode (Keeper checks the version it read) and
 * the claim is tried again, so a retry never deletes a fresh record another gateway just
 * made.
 */
export function createKeeperMapIdempotencyStore(transport: SqlTransport, options: KeeperMapIdempotencyOptions = {}): IdempotencyStore {
  const window = options.windowSeconds ?? DAY_SECONDS;
  const now = options.now ?? Date.now;
  let nextSweep = now() + SWEEP_EVERY_MS;

  const sweep = (): void => {
    if (now() < nextSweep) return;
    nextSweep = now() + SWEEP_EVERY_MS;
    transport
      .command(
        `ALTER TABLE idempotency_claims DELETE WHERE created_at <= now64(3) - INTERVAL {window:UInt32} SECOND
         SETTINGS keeper_map_strict_mode = 1`,
        { window },
      )
      .catch(() => {
        nextSweep = now();
      });
  };

  async function insertIfAbsent(claim: string, entry: IdempotencyEntry): Promise<boolean> {
    try {
      await transport.command(
        `INSERT INTO idempotency_claims SETTINGS keeper_map_strict_mode = 1
         SELECT {claim:String}, {fingerprint:String}, {record:String}, now64(3)`,
        { claim, fingerprint: entry.fingerprint, record: entry.record },
      );
      return true;
    } catch (error) {
      if (isKeeperKeyTaken(error)) return false;
      throw error;
    }
  }

  /**
   * The key's claim and its acknowledgement, in one read of two Keeper nodes. An
   * acknowledgement counts only if it is no older than the claim, so that one left from
   * an expired claim of the key vouches for nothing.
   */
  async function read(claim: string): Promise<{ held: HeldRow | undefined; ack: string | undefined }> {
    const rows = await transport.query<HeldRow & { claim: string }>(
      `SELECT claim, fingerprint, record, toString(created_at) AS created_text,
         created_at > now64(3) - INTERVAL {window:UInt32} SECOND AS live,
         dateDiff('millisecond', created_at, now64(3)) AS age_ms
       FROM idempotency_claims WHERE claim IN ({claim:String}, {ack:String})`,
      { claim, ack: ackName(claim), window },
    );
    const held = rows.find((r) => r.claim === claim);
    const ack = rows.find((r) => r.claim !== claim);
    const vouches = held !== undefined && ack !== undefined && ack.fingerprint === held.fingerprint && ack.created_text >= held.created_text;
    return { held, ack: vouches ? ack.record : undefined };
  }

  async function claimOnce(claim: string, entry: IdempotencyEntry): Promise<IdempotencyEntry> {
    // Read before claiming: requests that wait for another's acknowledgement claim again
    // and again, and a refused strict insert costs Keeper a write request where a read
    // costs it none (the race test saw Keeper writes stall behind such retries). Each
    // pass either finds a live record, removes an expired one, or claims; a later pass is
    // only needed when others keep expiring and recreating the key meanwhile.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const { held, ack } = await read(claim);
      if (held !== undefined && Number(held.live) === 1) {
        return { fingerprint: held.fingerprint, record: held.record, ack, ageMs: Number(held.age_ms) };
      }
      if (held !== undefined) {
        try {
          await transport.command(
            `DELETE FROM idempotency_claims
             WHERE claim = {claim:String} AND created_at <= now64(3) - INTERVAL {window:UInt32} SECOND
             SETTINGS keeper_map_strict_mode = 1`,
            { claim, window },
          );
        } catch (error) {
          // Another gateway removed or replaced the expired record first: claim again.
          if (!isKeeperFailure(error)) throw error;
        }
        continue;
      }
      if (await insertIfAbsent(claim, entry)) return { ...entry, ageMs: 0 };
    }
    throw storeNotSettled('idempotency store', 'an Idempotency-Key claim', 'neither won nor found a record after 5 tries');
  }

  return {
    compareAndSet: true,
    async acknowledge(ref, fingerprint, ack) {
      const claim = JSON.stringify([ref.orgId, ref.scope, ref.key]);
      // Not strict: an insert replaces the row, so one left from an expired claim of the key
      // gives way; two gateways acknowledging one record write the same thing.
      await transport.command(
        `INSERT INTO idempotency_claims SETTINGS keeper_map_strict_mode = 0
         SELECT {claim:String}, {fingerprint:String}, {record:String}, now64(3)`,
        { claim: ackName(claim), fingerprint, record: ack },
      );
    },
    async claim(ref: IdempotencyKeyRef, entry: IdempotencyEntry) {
      sweep();
      const claim = JSON.stringify([ref.orgId, ref.scope, ref.key]);
      for (const delay of KEEPER_RETRY_DELAYS_MS) {
        try {
          return await claimOnce(claim, entry);
        } catch (error) {
          if (!isKeeperFailure(error)) throw error;
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
      return claimOnce(claim, entry);
    },
  };
}
