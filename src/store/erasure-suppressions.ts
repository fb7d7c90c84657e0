import type { Logger } from '../observability/logger.js';
import { governingErasures, type ErasureRecord, type ErasureStore } from './clickhouse-erasure.js';
import type { ErasureScope } from './erasure-scope.js';
import type { ErasureConfig } from './erasure-settings.js';

/** An event as the suppression reads it: its organization and project, and its device only when asked. */
export interface SuppressedCandidate {
  readonly org_id: string;
  readonly project_id: string;
}

/**
 * The erasures whose suppression lives, as one gateway process knows them: read from the
 * erasures table every ERASURE_POLL_MS (docs/decisions/erasure.md). Ingest drops the
 * events they cover; live tails hide them.
 */
export interface ErasureSuppressions {
  /**
   * Whether a living erasure covers the event. `deviceOf` is called only when a device's
   * erasure of the event's organization lives: an event read as bytes builds its whole
   * object to answer it, which every other event is spared.
   */
  covers(event: SuppressedCandidate, deviceOf: () => string | null | undefined): boolean;
  /** Erasures whose suppression lives, as of the last read. */
  readonly active: number;
  /** Reads the erasures table now; what the poller does every interval. */
  refresh(): Promise<void>;
  stop(): Promise<void>;
}

export interface SuppressionOptions {
  readonly store: Pick<ErasureStore, 'active'>;
  readonly settings: ErasureConfig;
  readonly logger: Logger;
  /**
   * Told when an erasure begins or finishes, as this process first sees it: what it keeps
   * from the store (the first pages it keeps) may hold the scope's events and must go.
   */
  readonly changed?: (() => void) | undefined;
  /** Told the number of living erasures after each read (the erasures_active gauge). */
  readonly activeNow?: ((count: number) => void) | undefined;
  /** The clock; real time unless a test gives its own. */
  readonly now?: () => number;
  /** Reads every settings.pollMs unless 0 (only refresh()). */
  readonly polling?: boolean;
}

/** The living scopes by organization, an organization's in a list: an org is erased a few times at most. */
type Index = ReadonlyMap<string, readonly ErasureScope[]>;

function indexOf(records: readonly ErasureRecord[]): Index {
  const index = new Map<string, ErasureScope[]>();
  for (const { scope } of records) {
    const list = index.get(scope.orgId);
    if (list === undefined) index.set(scope.orgId, [scope]);
    else list.push(scope);
  }
  return index;
}

/**
 * What a record's state is for telling changes: its id and its status. A scope's next
 * erasure has an id of its own, so it is told as new (and the pages kept since the scope was
 * written again are dropped) even where this process last saw the scope's earlier one.
 */
const stateOf = (record: ErasureRecord) => `${record.erasureId}/${record.status}`;

export async function createErasureSuppressions(options: SuppressionOptions): Promise<ErasureSuppressions> {
  const { store, settings, logger } = options;
  const now = options.now ?? Date.now;
  let index: Index = new Map();
  let count = 0;
  let seen = new Set<string>();
  let failures = 0;

  async function refresh(): Promise<void> {
    const at = now();
    // The store answers one record per scope; applied here again so that the rule holds whatever store answers.
    const records = governingErasures(await store.active(at), at);
    const states = new Set(records.map(stateOf));
    const isNew = records.some((record) => !seen.has(stateOf(record)));
    // The index is replaced before anyone is told: a page read again after the change already sees the scope suppressed.
    index = indexOf(records);
    count = records.length;
    seen = states;
    options.activeNow?.(count);
    if (isNew) {
      logger.info({ erasures: records.map((r) => ({ id: r.erasureId, status: r.status, ...r.scope })) }, 'erasures applied');
      options.changed?.();
    }
  }

  let running: Promise<void> = Promise.resolve();
  const tick = (): void => {
    running = refresh().then(
      () => {
        if (failures > 0) logger.info({ failures }, 'erasures read again');
        failures = 0;
      },
      (error: unknown) => {
        // The last known list stays in force; a store that cannot answer this cannot take the scope's events either.
        if (failures++ === 0) logger.warn({ err: error }, 'erasures could not be read; the last list read stays in force');
      },
    );
  };
  // The first read is waited for: a process starts suppressing before it ingests or serves a tail.
  tick();
  await running;
  const timer = options.polling === false ? undefined : setInterval(tick, settings.pollMs);
  timer?.unref();

  return {
    covers(event, deviceOf) {
      if (count === 0) return false;
      const scopes = index.get(event.org_id.toLowerCase());
      if (scopes === undefined) return false;
      let device: string | null | undefined;
      let asked = false;
      for (const scope of scopes) {
        if (scope.projectId !== undefined && scope.projectId !== event.project_id.toLowerCase()) continue;
        if (scope.deviceId === undefined) return true;
        if (!asked) {
          device = deviceOf()?.toLowerCase();
          asked = true;
        }
        if (device === scope.deviceId) return true;
      }
      return false;
    },
    get active() {
      return count;
    },
    refresh,
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await running;
    },
  };
}
