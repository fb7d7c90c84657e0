/**
 * Lets the ingest consumer fetch the next batches while earlier ones are still being
 * stored, without ever committing an offset before everything below it is stored.
 *
 * kafkajs fetches from a broker again only once the batch handler has returned, so a
 * handler that awaits its insert makes fetching and storing take turns (a profile of
 * the consumer process showed it idle 47% of the time). With this pipeline the handler
 * hands its batch over and returns; each partition's commits run in a chain, one link
 * per batch, and a link commits only after its own batch and every earlier link of the
 * same partition succeeded. A link whose store failed breaks the chain: no later batch
 * of that partition is committed until `fence()` (a rebalance) starts a new one, and
 * the group delivers everything after the last commit again.
 *
 * Rebalances are fenced by generation. Each link belongs to the generation it was
 * tracked in, and once `fence()` has started a new one it never commits: after a
 * rebalance the group delivers the partition again from its committed offset (to this
 * member or another), and a late commit of an older batch would move that offset back
 * below what the new owner has committed since.
 *
 * `admit` bounds the events held in flight, which is the consumer's backpressure: when
 * the store is slow or sick, handlers wait in `admit` and kafkajs stops fetching. A
 * fence releases every waiting handler with `false`, so a rebalance is never held up
 * behind a store that cannot take more.
 *
 * It also knows, per partition, since when a fetched batch has waited for its commit:
 * that is how a stalled partition is told (`stalled`).
 */
export interface CommitPipeline {
  /**
   * Resolves true once `events` more fit under the bound (a batch always fits when nothing
   * is in flight), or false when a fence came first: the batch is then not to be tracked.
   */
  admit(events: number): Promise<boolean>;
  /** The current generation, for a batch to know later whether it was fenced off. */
  generation(): number;
  /**
   * Takes one admitted batch of a partition: `stored` settles when its events are stored,
   * and `commit` runs with its value once it and every earlier batch of the partition are,
   * unless a fence came in between; commits of one partition never overlap. The returned promise settles with the link (rejecting when this batch
   * or an earlier one failed, or with FencedError).
   */
  track<T>(partition: string, events: number, stored: Promise<T>, commit: (stored: T) => Promise<void>): Promise<void>;
  /** Resolves when every tracked batch has been committed or has failed, including ones tracked while waiting. */
  settled(): Promise<void>;
  /**
   * Starts a new generation: every chain is forgotten, no link tracked before commits,
   * and handlers waiting in `admit` are released with false.
   */
  fence(): void;
  /** Events admitted and not yet stored (or failed). */
  inFlight(): number;
  /** Partitions of the current generation whose oldest uncommitted batch has waited longer than `stallMs`, and for how long. */
  stalled(stallMs: number): { readonly partition: string; readonly waitingMs: number }[];
}

/** A link that a rebalance fenced off: its batch may be stored, but its offset is not this member's to commit. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
  constructor(readonly partition: string) {
    super(`batch of ${partition} tracked before a rebalance; not committed`);
  }
}

interface PartitionProgress {
  /** Links tracked and not settled. */
  open: number;
  /** Since when the partition has waited for a commit: its last commit, or when its first open link came. */
  since: number;
}

export function createCommitPipeline(maxInFlightEvents: number, now: () => number = () => performance.now()): CommitPipeline {
  let inFlight = 0;
  let generation = 0;
  let waiting: { readonly events: number; readonly admitted: (ok: boolean) => void }[] = [];
  const tails = new Map<string, Promise<void>>();
  const links = new Set<Promise<void>>();
  const progress = new Map<string, PartitionProgress>();

  const fits = (events: number) => inFlight === 0 || inFlight + events <= maxInFlightEvents;

  function release(events: number): void {
    inFlight -= events;
    // First come, first admitted: a large batch is not overtaken for ever by small ones.
    while (waiting.length > 0 && fits(waiting[0]!.events)) {
      const next = waiting.shift()!;
      inFlight += next.events;
      next.admitted(true);
    }
  }

  function opened(partition: string): PartitionProgress {
    let state = progress.get(partition);
    if (state === undefined) {
      state = { open: 0, since: now() };
      progress.set(partition, state);
    } else if (state.open === 0) state.since = now();
    state.open += 1;
    return state;
  }

  return {
    admit(events) {
      if (waiting.length === 0 && fits(events)) {
        inFlight += events;
        return Promise.resolve(true);
      }
      return new Promise<boolean>((admitted) => waiting.push({ events, admitted }));
    },
    generation: () => generation,
    track(partition, events, stored, commit) {
      const tracked = generation;
      const previous = tails.get(partition) ?? Promise.resolve();
      const state = opened(partition);
      const current = () => tracked === generation;
      const link = (async () => {
        let value: Awaited<typeof stored>;
        try {
          value = await stored;
        } finally {
          release(events);
        }
        await previous;
        if (!current()) throw new FencedError(partition);
        await commit(value);
        if (current()) state.since = now();
      })();
      tails.set(partition, link);
      links.add(link);
      // Settled links leave the set; a rejection is the caller's to report, and the next link of the chain sees it.
      const settle = () => {
        links.delete(link);
        if (current()) state.open -= 1;
      };
      link.then(settle, settle);
      return link;
    },
    async settled() {
      while (links.size > 0) await Promise.allSettled([...links]);
    },
    fence() {
      generation += 1;
      tails.clear();
      progress.clear();
      const released = waiting;
      waiting = [];
      for (const { admitted } of released) admitted(false);
    },
    inFlight: () => inFlight,
    stalled(stallMs) {
      const at = now();
      const out: { partition: string; waitingMs: number }[] = [];
      for (const [partition, state] of progress) {
        const waitingMs = at - state.since;
        if (state.open > 0 && waitingMs > stallMs) out.push({ partition, waitingMs });
      }
      return out;
    },
  };
}
