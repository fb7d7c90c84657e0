/**
 * Inserting a batch that the store may partly refuse. The batch goes in whole; when the
 * store refuses it for its data, it is split in halves and each half is inserted on its
 * own, recursively, until every row that stores has been stored and every row that is
 * refused has been refused alone: only a row refused with nothing else in its insert is
 * judged poison. A failure that is not a refusal (the store is sick) ends the search at
 * once and is thrown, so no row is ever judged while the store cannot judge it.
 */

export interface BisectInsertOptions<T, R> {
  /** Stores the items, all or none; the search only ever calls it once at a time. */
  insert(items: readonly T[]): Promise<void>;
  /** The store's refusal of the rows, judged from a failed insert (the store may be asked); undefined when the store is sick. */
  refusal(error: unknown): Promise<R | undefined>;
  /**
   * Whether a refusal says too little to judge a row by once: the row is then judged
   * poison only if a second insert of it alone is refused too. None by default.
   */
  doubt?(refusal: R): boolean;
}

export interface Refused<T, R> {
  readonly item: T;
  /** The refusal of the insert that held this item alone. */
  readonly refusal: R;
}

export interface BisectInsertResult<T, R> {
  /** The items the store refused on their own, in their order in the batch; every other item is stored. */
  readonly refused: readonly Refused<T, R>[];
  /** How many inserts the search took, the first one included. */
  readonly inserts: number;
}

function halves<T>(items: readonly T[]): [readonly T[], readonly T[]] {
  const middle = Math.ceil(items.length / 2);
  return [items.slice(0, middle), items.slice(middle)];
}

/**
 * Stores `items` and isolates the ones the store refuses. With one refused row among n
 * it takes from ⌊log2 n⌋ + 2 inserts (the left half stores at every level, so the right
 * one is split without an insert of its own) to 2·⌈log2 n⌉ + 1; with k, at most about k
 * times that.
 * Rejects with the store's error as soon as an insert fails for any other reason: rows
 * stored by then stay stored, and the caller retries the batch (the store folds copies).
 */
export async function bisectInsert<T, R>(items: readonly T[], options: BisectInsertOptions<T, R>): Promise<BisectInsertResult<T, R>> {
  const refused: Refused<T, R>[] = [];
  let inserts = 0;

  /** Inserts the part; its refusal if the store refused it, undefined if stored. A sick store throws. */
  async function attempt(part: readonly T[]): Promise<R | undefined> {
    inserts += 1;
    try {
      await options.insert(part);
      return undefined;
    } catch (error) {
      const refusal = await options.refusal(error);
      if (refusal === undefined) throw error;
      return refusal;
    }
  }

  /**
   * `part` holds a refused row: it was refused as a whole (`own` is that refusal), or its
   * enclosing part was refused while the other half stored (`own` is undefined, and no
   * insert is spent on the whole of it).
   */
  async function search(part: readonly T[], own: R | undefined): Promise<void> {
    if (part.length === 1) {
      // A row is judged only by an insert of its own; if it stores now, it was not poison.
      let refusal = own ?? (await attempt(part));
      // A doubtful refusal (a timeout, an error no list names) may be the moment's, not the row's: one more insert of the row alone decides.
      if (refusal !== undefined && options.doubt?.(refusal) === true) refusal = await attempt(part);
      if (refusal !== undefined) refused.push({ item: part[0]!, refusal });
      return;
    }
    const [left, right] = halves(part);
    const leftRefusal = await attempt(left);
    if (leftRefusal === undefined) {
      await search(right, undefined);
      return;
    }
    await search(left, leftRefusal);
    const rightRefusal = await attempt(right);
    if (rightRefusal !== undefined) await search(right, rightRefusal);
  }

  if (items.length > 0) {
    const whole = await attempt(items);
    if (whole !== undefined) await search(items, whole);
  }
  return { refused, inserts };
}
