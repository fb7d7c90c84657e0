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
 * `admit` bounds the events and bytes held in flight, which is the consumer's backpressure: when
 * the store is slow or sick, handlers wait in `admit` and kafkajs stops fetching. It also
 * bounds, at HELD_PER_IN_FLIGHT times that, the batches admitted and not yet committed:
 * a link stored but waiting on an earlier one (a dead-letter send or a commit retried
 * while the broker refuses it) holds its batch's messages, and without this bound every
 * later batch of the partition was stored and parked there until the heap ran out. A
 * fence releases every waiting handler with `false`, so a rebalance is never held up
 * behind a store that cannot take more.
 *
 * Above both, the byte budget (`buffered`, INGEST_MAX_BUFFERED_BYTES) bounds what the
 * admitted and not yet committed batches cost the process's memory, in bytes: their
 * values, and MESSAGE_OVERHEAD_BYTES for each message beside its value (`bufferedBytes`).
 * The event and value bounds count what an insert carries; this one counts what the
 * process holds, which for small events is more the objects around a value than the value
 * (docs/decisions/ingest-memory-bound.md).
 *
 * Between a rebalance's start (`fence`) and this member's join of the next generation
 * (`joined`), nothing is admitted: a batch handed over then (a fetch answered late, a
 * fence our own heartbeat learned of before kafkajs did) would start a chain whose commit
 * goes out under whichever generation kafkajs holds, past batches the fence gave up. It is
 * fetched again from the committed offset once the member has joined.
 *
 * It also knows, per partition, since when a fetched batch has waited for its commit:
 * that is how a stalled partition is told (`stalled`).
 */
/** What a batch holds, as the in-flight bounds count it. */
export interface Load {
  readonly events: number;
  /** Bytes of its message values. */
  readonly bytes: number;
}

/** The pipeline's bounds: `events` and `bytes` in flight, and the byte budget of what is held. */
export interface PipelineBounds extends Load {
  /** Most bytes (bufferedBytes) of the batches admitted and not yet committed; unbounded unless set. */
  readonly buffered?: number;
}

/**
 * What one fetched message holds in the process's memory beside its value, in bytes: the
 * kafkajs message and its buffers' views, its offset and timestamp strings, its key, our
 * wrapper, the rest of the fetch response its value is a slice of, and its share of the
 * rows and the request body while its insert runs. From the backlog bench (telemetry of
 * about 450-byte values, 2026-11-29): a draining consumer's heap and external buffers,
 * less its values, came to about this much for each message held (docs/decisions/ingest-memory-bound.md).
 */
export const MESSAGE_OVERHEAD_BYTES = 2048;

/** What a load costs the process's memory, as the byte budget counts it. */
export const bufferedBytes = (load: Load): number => load.bytes + load.events * MESSAGE_OVERHEAD_BYTES;

export interface CommitPipeline {
  /**
   * Resolves true once `load` more fits under both bounds (a batch always fits when nothing
   * is in flight), or false when a fence came first: the batch is then not to be tracked.
   */
  admit(load: Load): Promise<boolean>;
  /** The current generation: read once per batch, before `admit`, and handed to `track`. */
  generation(): number;
  /**
   * Takes one admitted batch of a partition, fetched in `generation`: `stored` settles when
   * its events are stored, and `commit` runs with its value once it and every earlier batch
   * of the partition are, unless a fence came in between; commits of one partition never
   * overlap. A batch of an earlier generation is refused at once (FencedError) and never
   * joins the current chains. The returned promise settles with the link (rejecting when
   * this batch or an earlier one failed, or with FencedError).
   */
  track<T>(partition: string, generation: number, load: Load, stored: Promise<T>, commit: (stored: T) => Promise<void>): Promise<void>;
  /** Resolves when every tracked batch has been committed or has failed, including ones tracked while waiting. */
  settled(): Promise<void>;
  /**
   * A rebalance began: starts a new generation (every chain is forgotten, no link tracked
   * before commits), releases handlers waiting in `admit` with false, and admits nothing
   * more until `joined`.
   */
  fence(): void;
  /** This member joined a generation: fences as `fence` does, then admits again. */
  joined(): void;
  /** False from a rebalance's start until the member joined the next generation. */
  admitting(): boolean;
  /** What is admitted and not yet stored (or failed). */
  inFlight(): Load;
  /** What is admitted and not yet committed (or failed, or fenced off). */
  held(): Load;
  /** What the batches admitted and not yet committed cost in memory (bufferedBytes), what the byte budget bounds. */
  buffered(): number;
  /**
   * Partitions of the current generation that wait for a commit: whose oldest uncommitted
   * batch has waited longer than `stallMs`, or whose chain broke (a link failed without a
   * fence: nothing after it commits until the next generation), and for how long.
   */
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
  /** A link failed in this generation: nothing of the partition commits until the next one. */
  broken: boolean;
}

/** How many times the in-flight bounds the batches admitted and not yet committed may hold. */
export const HELD_PER_IN_FLIGHT = 2;

export function createCommitPipeline(bounds: PipelineBounds, now: () => number = () => performance.now()): CommitPipeline {
  const budget = bounds.buffered ?? Infinity;
  let events = 0;
  let bytes = 0;
  let heldEvents = 0;
  let heldBytes = 0;
  let generation = 0;
  /** False from a rebalance's start until the member joins the next generation. */
  let admitting = true;
  let waiting: { readonly load: Load; readonly admitted: (ok: boolean) => void }[] = [];
  const tails = new Map<string, Promise<void>>();
  const links = new Set<Promise<void>>();
  const progress = new Map<string, PartitionProgress>();

  // A batch always fits when nothing is in flight (or held), however large: a batch above
  // the budget is taken alone rather than never.
  const fits = (load: Load) =>
    (events === 0 || (events + load.events <= bounds.events && bytes + load.bytes <= bounds.bytes)) &&
    (heldEvents === 0 ||
      (heldEvents + load.events <= HELD_PER_IN_FLIGHT * bounds.events &&
        heldBytes + load.bytes <= HELD_PER_IN_FLIGHT * bounds.bytes &&
        bufferedBytes({ events: heldEvents + load.events, bytes: heldBytes + load.bytes }) <= budget));
  const take = (load: Load) => {
    events += load.events;
    bytes += load.bytes;
    heldEvents += load.events;
    heldBytes += load.bytes;
  };

  function admitWaiting(): void {
    // First come, first admitted: a large batch is not overtaken for ever by small ones.
    while (waiting.length > 0 && fits(waiting[0]!.load)) {
      const next = waiting.shift()!;
      take(next.load);
      next.admitted(true);
    }
  }

  /** Its events are stored (or failed): room in flight. */
  function releaseStored(load: Load): void {
    events -= load.events;
    bytes -= load.bytes;
    admitWaiting();
  }

  /** Its link settled (committed, failed or fenced off): it holds nothing more. */
  function releaseHeld(load: Load): void {
    heldEvents -= load.events;
    heldBytes -= load.bytes;
    admitWaiting();
  }

  function opened(partition: string): PartitionProgress {
    let state = progress.get(partition);
    if (state === undefined) {
      state = { open: 0, since: now(), broken: false };
      progress.set(partition, state);
    } else if (state.open === 0 && !state.broken) state.since = now();
    state.open += 1;
    return state;
  }

  function fence(): void {
    admitting = false;
    generation += 1;
    tails.clear();
    progress.clear();
    const released = waiting;
    waiting = [];
    for (const { admitted } of released) admitted(false);
  }

  return {
    admit(load) {
      if (!admitting) return Promise.resolve(false);
      if (waiting.length === 0 && fits(load)) {
        take(load);
        return Promise.resolve(true);
      }
      return new Promise<boolean>((admitted) => waiting.push({ load, admitted }));
    },
    generation: () => generation,
    track(partition, tracked, load, stored, commit) {
      const current = () => tracked === generation;
      if (!current()) {
        // Fetched before a fence that came while it waited for room: it must not poison the new chain.
        const refused = (async () => {
          try {
            await stored;
          } finally {
            releaseStored(load);
          }
          throw new FencedError(partition);
        })();
        links.add(refused);
        const forget = () => {
          links.delete(refused);
          releaseHeld(load);
        };
        refused.then(forget, forget);
        return refused;
      }
      const previous = tails.get(partition) ?? Promise.resolve();
      const state = opened(partition);
      const link = (async () => {
        let value: Awaited<typeof stored>;
        try {
          value = await stored;
        } finally {
          releaseStored(load);
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
        releaseHeld(load);
      };
      link.then(settle, (error: unknown) => {
        // A chain that broke in its own generation commits nothing more: it stays stalled, not silent.
        if (current() && !(error instanceof FencedError)) state.broken = true;
        settle();
      });
      return link;
    },
    async settled() {
      while (links.size > 0) await Promise.allSettled([...links]);
    },
    fence,
    joined() {
      fence();
      admitting = true;
    },
    admitting: () => admitting,
    inFlight: () => ({ events, bytes }),
    held: () => ({ events: heldEvents, bytes: heldBytes }),
    buffered: () => bufferedBytes({ events: heldEvents, bytes: heldBytes }),
    stalled(stallMs) {
      const at = now();
      const out: { partition: string; waitingMs: number }[] = [];
      for (const [partition, state] of progress) {
        const waitingMs = at - state.since;
        if (state.broken || (state.open > 0 && waitingMs > stallMs)) out.push({ partition, waitingMs });
      }
      return out;
    },
  };
}
