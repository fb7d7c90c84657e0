import { randomUUID } from 'node:crypto';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';

/** Telemetry as a busy project sends it: readings from many devices across fleets and domains. */
export function telemetry(count: number, orgId: string, projectId: string, start = Date.parse('2026-01-01T00:00:00Z')): CanonicalEvent[] {
  const fleets = Array.from({ length: 8 }, (_, f) => `00000000-0000-4000-9000-${String(f).padStart(12, '0')}`);
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    org_id: orgId,
    project_id: projectId,
    domain: ['telemetry', 'devices', 'edge', 'ota'][i % 4]!,
    entity: 'reading',
    action: 'recorded',
    occurred_at: new Date(start + i).toISOString(),
    device_id: `00000000-0000-4000-8000-${String(i % 1000).padStart(12, '0')}`,
    fleet_id: fleets[i % fleets.length]!,
    payload: { seq: i, temperature: 20 + (i % 10), battery: 90 - (i % 7) },
    source_service: 'bench',
  }));
}
