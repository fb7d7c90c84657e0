import type { FeedFilters } from './event-store.js';
import type { SqlParam } from './sql-transport.js';

/**
 * The WHERE conditions of the filters that are set, each value bound as a parameter
 * (added to `params`), never written into the SQL. The feed and the live tail share them.
 */
export function filterConditions(f: FeedFilters, params: Record<string, SqlParam>): string[] {
  const filters: readonly [value: string | undefined, name: string, condition: string][] = [
    [f.domain, 'domain', 'domain = {domain:String}'],
    [f.entity, 'entity', 'entity = {entity:String}'],
    [f.action, 'action', 'action = {action:String}'],
    [f.deviceId, 'device_id', 'device_id = {device_id:UUID}'],
    [f.fleetId, 'fleet_id', 'fleet_id = {fleet_id:UUID}'],
    [f.since, 'since', "occurred_at >= {since:DateTime64(6, 'UTC')}"],
    [f.until, 'until', "occurred_at < {until:DateTime64(6, 'UTC')}"],
  ];
  const conditions: string[] = [];
  for (const [value, name, condition] of filters) {
    if (value === undefined) continue;
    conditions.push(condition);
    params[name] = value;
  }
  return conditions;
}
