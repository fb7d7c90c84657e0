import type { EventsStreamQuery } from '../../generated/schema-types.js';
import type { TailFilters } from '../../store/event-store.js';

/** The filters the feed and the live tail share, from their validated query; ids in the store's lower case. */
export function eventFilters(query: Pick<EventsStreamQuery, 'domain' | 'entity' | 'action' | 'device_id' | 'fleet_id'>): TailFilters {
  return {
    domain: query.domain,
    entity: query.entity,
    action: query.action,
    deviceId: query.device_id?.toLowerCase(),
    fleetId: query.fleet_id?.toLowerCase(),
  };
}
