/** What was accepted under an Idempotency-Key, so that a retry answers the same way. */
export interface IdempotencyEntry {
  /** Digest of the request the key was first used with. */
  readonly fingerprint: string;
  /** The accepted command, its event and the answer, serialized by the command handler. */
  readonly record: string;
}

export interface IdempotencyKeyRef {
  readonly orgId: string;
  /** What the key is scoped to, e.g. the operation and its path ids. */
  readonly scope: string;
  readonly key: string;
}

export interface IdempotencyStore {
  /** The first entry saved for this key within its retention, if any. */
  find(ref: IdempotencyKeyRef): Promise<IdempotencyEntry | undefined>;
  save(ref: IdempotencyKeyRef, entry: IdempotencyEntry): Promise<void>;
}
