/**
 * The store side of the dashboards scenario, on the ClickHouse server: the history written
 * before the dashboards start (the retention scenario's too), the server's count of
 * SELECTs, and each sampled answer compared with what the store held when it was asked.
 */
import { toStoreTimestamp } from '../../src/store/timestamps.js';
import type { AnsweredPage } from './dashboard-clients.js';
import { historySpan, writeAgedHistory } from './history.js';
import { runSql } from './server-sql.js';

/**
 * `total` events over the 24 months before the last minute (bench/support/history.ts), past
 * months aged to one part each, `batch` an insert in time order as ingestion writes them:
 * 4 fleets a project and no idle project, as issue 52 describes the deployment.
 */
export async function writeHistory(url: string, database: string, total: number, batch: number): Promise<void> {
  await writeAgedHistory(url, database, { fleetsPerProject: 4, idleProjects: 0 }, total, batch, historySpan(Date.now() - 60_000));
}

/** SELECT queries the server has run since it started (system.events): the store's read load, whoever sent it. */
export async function selectQueries(url: string): Promise<number> {
  return Number((await runSql(url, 'system', "SELECT value FROM system.events WHERE event = 'SelectQuery'")).trim());
}

/** How far behind the store one answer was, in ms; 0 when it missed nothing. */
export interface Staleness {
  readonly behindMs: number;
  readonly missed: number;
}

/**
 * One answer against the store as it is now: the events of the page's range (its project,
 * its device if it has one, and at or above its last item when the page was full) stored
 * (`ingested_at`) no later than the request was sent, that the answer does not hold. How
 * far behind it was is the request's time less the oldest store time among those.
 */
export async function stalenessOf(url: string, database: string, page: AnsweredPage): Promise<Staleness> {
  const where = ['org_id = {org:UUID}', 'project_id = {project:UUID}', "ingested_at <= fromUnixTimestamp64Milli({asked:Int64}, 'UTC')", 'id NOT IN {ids:Array(UUID)}'];
  const params: Record<string, string> = {
    org: page.dashboard.orgId,
    project: page.dashboard.projectId,
    asked: String(page.askedAtMs),
    ids: `[${page.ids.map((id) => `'${id}'`).join(',')}]`,
  };
  if (page.dashboard.deviceId !== undefined) {
    where.push('device_id = {device:UUID}');
    params['device'] = page.dashboard.deviceId;
  }
  if (page.last !== undefined) {
    // The feed's order is (occurred_at, id) descending: the range ends at the page's last item.
    where.push("(occurred_at, id) >= ({last_t:DateTime64(6, 'UTC')}, {last_id:UUID})");
    params['last_t'] = toStoreTimestamp(page.last.occurred_at);
    params['last_id'] = page.last.id;
  }
  const text = await runSql(url, database, `SELECT count() AS missed, toUnixTimestamp64Milli(min(ingested_at)) AS oldest FROM events WHERE ${where.join(' AND ')} FORMAT JSONEachRow`, params);
  const { missed, oldest } = JSON.parse(text) as { missed: string; oldest: string };
  return Number(missed) === 0 ? { behindMs: 0, missed: 0 } : { behindMs: page.askedAtMs - Number(oldest), missed: Number(missed) };
}

/** Every sample's staleness, eight at a time. */
export async function stalenessOfAll(url: string, database: string, pages: readonly AnsweredPage[]): Promise<Staleness[]> {
  const out: Staleness[] = new Array<Staleness>(pages.length);
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < pages.length; k = next++) out[k] = await stalenessOf(url, database, pages[k]!);
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}
