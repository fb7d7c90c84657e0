import type { LiveTailSettings, TailRequest } from './live-tail-types.js';
import { tooManyStreams } from './tail-notices.js';

export interface TailCaps {
  /** Takes a stream's slots (process, caller, organization), or throws TOO_MANY_STREAMS; returns what frees them, once. */
  take(request: TailRequest): () => void;
}

/** The per-process, per-caller and per-organization caps on open streams (docs/decisions/live-tail-limits.md). */
export function createTailCaps(settings: Pick<LiveTailSettings, 'maxPerProcess' | 'maxPerCaller' | 'maxPerOrg'>): TailCaps {
  const perOrg = new Map<string, number>();
  const perCaller = new Map<string, number>();
  let open = 0;

  function count(map: Map<string, number>, key: string, by: number): void {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  }

  return {
    take(request) {
      if (open >= settings.maxPerProcess) {
        throw tooManyStreams(`This gateway has ${settings.maxPerProcess} live tails open, as many as it serves; retry after Retry-After, or on another replica.`);
      }
      if ((perCaller.get(request.caller) ?? 0) >= settings.maxPerCaller) {
        throw tooManyStreams(`This caller already has ${settings.maxPerCaller} live tails open on this gateway; close one, or retry after Retry-After.`);
      }
      if ((perOrg.get(request.orgId) ?? 0) >= settings.maxPerOrg) {
        throw tooManyStreams(`This organization already has ${settings.maxPerOrg} live tails open on this gateway; close one, or retry after Retry-After.`);
      }
      open += 1;
      count(perCaller, request.caller, 1);
      count(perOrg, request.orgId, 1);
      let freed = false;
      return () => {
        if (freed) return;
        freed = true;
        open -= 1;
        count(perCaller, request.caller, -1);
        count(perOrg, request.orgId, -1);
      };
    },
  };
}
