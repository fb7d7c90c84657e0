import { DEVICE_SPANS_TABLE } from './device-events.js';
import { PAGE_SETTINGS } from './feed-sql.js';
import type { SqlParam, SqlTransport } from './sql-transport.js';

/** Where a device's events lie in time and how many the view counted (src/store/device-events.ts): a guess, never a bound. */
export interface DeviceSpan {
  readonly oldest: string;
  readonly newest: string;
  readonly events: number;
}

export interface DeviceScope {
  readonly orgId: string;
  readonly projectId: string;
  readonly deviceId: string;
}

/** A device's span; undefined when no event has named the device. */
export type DeviceSpanRead = (scope: DeviceScope) => Promise<DeviceSpan | undefined>;

/** The most devices one query asks for: its conditions stay a few kilobytes. */
const MOST_A_QUERY = 256;

interface Waiting {
  readonly key: string;
  readonly scope: DeviceScope;
  readonly resolve: (span: DeviceSpan | undefined) => void;
  readonly reject: (error: unknown) => void;
}

const keyOf = (orgId: string, projectId: string, deviceId: string) => `${orgId} ${projectId} ${deviceId}`.toLowerCase();

/** One row of a span read, as the server sends it: UInt64 as text. */
interface SpanRow {
  readonly org_id: string;
  readonly project_id: string;
  readonly device_id: string;
  readonly oldest: string;
  readonly newest: string;
  readonly events: number | string;
}

/**
 * The spans of `scopes` in one read of device_spans, each device's rows folded (min, max,
 * sum). The devices are one set, `(org_id, project_id, device_id) IN` three arrays zipped:
 * the engine selects granules by the table's key from it and tests each row read against a
 * hash of it. Written as one condition per device joined by OR, a read of 256 devices cost
 * the server 20 times the CPU (docs/decisions/device-pages-remembered-width.md).
 */
export function deviceSpansSql(scopes: readonly DeviceScope[]): { sql: string; params: Record<string, SqlParam> } {
  const params: Record<string, SqlParam> = {
    orgs: scopes.map((scope) => scope.orgId),
    projects: scopes.map((scope) => scope.projectId),
    devices: scopes.map((scope) => scope.deviceId),
  };
  const sql = `SELECT org_id, project_id, device_id, min(oldest) AS oldest, max(newest) AS newest, sum(events) AS events
    FROM ${DEVICE_SPANS_TABLE}
    WHERE (org_id, project_id, device_id) IN arrayZip({orgs:Array(UUID)}, {projects:Array(UUID)}, {devices:Array(UUID)})
    GROUP BY org_id, project_id, device_id
    SETTINGS ${PAGE_SETTINGS.join(', ')}`;
  return { sql, params };
}

/**
 * Device spans read together, for device pages that cannot take a query of their own
 * (docs/decisions/device-pages-remembered-width.md): a read that finds no read out goes at
 * once; reads that come while one is out wait and go together as the next, one query for
 * up to MOST_A_QUERY devices. A failed read fails every span it asked for.
 */
export function batchedDeviceSpans(transport: SqlTransport): DeviceSpanRead {
  const waiting: Waiting[] = [];
  let out = false;
  const send = async (batch: readonly Waiting[]) => {
    const { sql, params } = deviceSpansSql(batch.map((w) => w.scope));
    const rows = await transport.query<SpanRow>(sql, params);
    const found = new Map(rows.map((r) => [keyOf(r.org_id, r.project_id, r.device_id), { oldest: r.oldest, newest: r.newest, events: Number(r.events) }]));
    for (const w of batch) w.resolve(found.get(w.key));
  };
  const dispatch = () => {
    if (out || waiting.length === 0) return;
    const batch = waiting.splice(0, MOST_A_QUERY);
    out = true;
    void send(batch)
      .catch((error: unknown) => {
        for (const w of batch) w.reject(error);
      })
      .finally(() => {
        out = false;
        dispatch();
      });
  };
  return (scope) =>
    new Promise<DeviceSpan | undefined>((resolve, reject) => {
      waiting.push({ key: keyOf(scope.orgId, scope.projectId, scope.deviceId), scope, resolve, reject });
      dispatch();
    });
}
