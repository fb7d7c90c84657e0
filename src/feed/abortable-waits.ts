import { setTimeout as sleep } from 'node:timers/promises';

/** Waits, but never past an abort. */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the loop checks the signal next.
  }
}

/** Settles with `work`, or as soon as `signal` aborts: a client that stopped reading must not hold a stop up. */
export async function unlessAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  let onAbort = () => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
