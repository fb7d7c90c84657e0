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
 * of that partition is committed until `reset()` (a rebalance) starts a new one, and
 * the group delivers everything after the last commit again.
 *
 * `admit` bounds the events held in flight, which is the consumer's backpressure: when
 * the store is slow or sick, handlers wait in `admit` and kafkajs stops fetching.
 */
export interface CommitPipeline {
  /** Resolves once `events` more fit under the bound; a batch always fits when nothing is in flight. */
  admit(events: number): Promise<void>;
  /**
   * Takes one admitted batch of a partition: `stored` settles when its events are stored,
   * and `commit` runs once it and every earlier batch of the partition are. The returned
   * promise settles with the link (rejecting when this batch or an earlier one failed).
   */
  track(partition: string, events: number, stored: Promise<void>, commit: () => Promise<void>): Promise<void>;
  /** Resolves when every tracked batch has been committed or has failed, including ones tracked while waiting. */
  settled(): Promise<void>;
  /** Forgets every chain, so that a partition assigned again starts from a clean one. */
  reset(): void;
  /** Events admitted and not yet stored (or failed). */
  inFlight(): number;
}

export function createCommitPipeline(maxInFlightEvents: number): CommitPipeline {
  let inFlight = 0;
  const waiting: { readonly events: number; readonly admitted: () => void }[] = [];
  const tails = new Map<string, Promise<void>>();
  const links = new Set<Promise<void>>();

  const fits = (events: number) => inFlight === 0 || inFlight + events <= maxInFlightEvents;

  function release(events: number): void {
    inFlight -= events;
    // First come, first admitted: a large batch is not overtaken for ever by small ones.
    while (waiting.length > 0 && fits(waiting[0]!.events)) {
      const next = waiting.shift()!;
      inFlight += next.events;
      next.admitted();
    }
  }

  return {
    admit(events) {
      if (waiting.length === 0 && fits(events)) {
        inFlight += events;
        return Promise.resolve();
      }
      return new Promise<void>((admitted) => waiting.push({ events, admitted }));
    },
    track(partition, events, stored, commit) {
      const previous = tails.get(partition) ?? Promise.resolve();
      const link = (async () => {
        try {
          await stored;
        } finally {
          release(events);
        }
        await previous;
        await commit();
      })();
      tails.set(partition, link);
      links.add(link);
      // Settled links leave the set; a rejection is the caller's to report, and the next link of the chain sees it.
      link.then(
        () => links.delete(link),
        () => links.delete(link),
      );
      return link;
    },
    async settled() {
      while (links.size > 0) await Promise.allSettled([...links]);
    },
    reset() {
      tails.clear();
    },
    inFlight: () => inFlight,
  };
}
