/** What was accepted under an Idempotency-Key, so that a retry answers the same way. */
export interface IdempotencyEntry {
  /** Digest of the request the key was first used with. */
  readonly fingerprint: string;
  /** The accepted command, its event and the answer, serialized by the command handler. */
  readonly record: string;
  /**
   * Set once the recorded command was acknowledged (its partition and offset, serialized
   * by the command handler): a retry then answers from the record and publishes nothing.
   */
  readonly ack?: string | undefined;
  /** How long ago the held entry was claimed, by the store's clock; set on entries claim() returns. */
  readonly ageMs?: number | undefined;
}

export interface IdempotencyKeyRef {
  readonly orgId: string;
  /** What the key is scoped to, e.g. the operation and its path ids. */
  readonly scope: string;
  readonly key: string;
}

export interface IdempotencyStore {
  /**
   * Records `entry` for the key unless an entry within its window is there already, and
   * returns the entry that holds: `entry` itself, or the one recorded first, with its
   * acknowledgement if one was recorded. With a compare-and-set underneath (KeeperMap)
   * every caller, in any process, gets the same entry; without one, callers that race
   * may each get their own (docs/decisions/idempotency.md).
   */
  claim(ref: IdempotencyKeyRef, entry: IdempotencyEntry): Promise<IdempotencyEntry>;
  /**
   * Records that the command claimed with `fingerprint` was acknowledged. An
   * acknowledgement counts only for a claim made no later than it, so one left from a
   * key's earlier window never vouches for a new claim.
   */
  acknowledge(ref: IdempotencyKeyRef, fingerprint: string, ack: string): Promise<void>;
  /** Whether claim() is a real compare-and-set; for logs and readiness. */
  readonly compareAndSet: boolean;
}
