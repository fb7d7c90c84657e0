import { setTimeout as sleep } from 'node:timers/promises';

/** Paces sends to at most `perSecond` on average since the first; unlimited when undefined. */
export function rateLimit(perSecond: number | undefined, now: () => number = Date.now): (count: number) => Promise<void> {
  if (perSecond === undefined) return async () => undefined;
  let startedAt: number | undefined;
  let granted = 0;
  return async (count: number) => {
    startedAt ??= now();
    granted += count;
    // The pace the operator asked for, not a wait on a condition: the slot of the last of these sends.
    const due = startedAt + ((granted - count) * 1000) / perSecond;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
  };
}
