/**
 * The JSON Schemas of schemas/, imported as data so that the build carries them along,
 * paired with the TypeScript type generated from each (src/generated/schema-types.ts).
 */
import canonicalEventPage from '../../schemas/canonical-event-page.schema.json' with { type: 'json' };
import canonicalEvent from '../../schemas/canonical-event.schema.json' with { type: 'json' };
import cursorPaginationMeta from '../../schemas/cursor-pagination-meta.schema.json' with { type: 'json' };
import devicePath from '../../schemas/device-path.schema.json' with { type: 'json' };
import edgePolicyAccepted from '../../schemas/edge-policy-accepted.schema.json' with { type: 'json' };
import edgePolicyCommand from '../../schemas/edge-policy-command.schema.json' with { type: 'json' };
import edgePolicyPatch from '../../schemas/edge-policy-patch.schema.json' with { type: 'json' };
import edgePolicyValue from '../../schemas/edge-policy-value.schema.json' with { type: 'json' };
import enrollmentAccepted from '../../schemas/enrollment-accepted.schema.json' with { type: 'json' };
import enrollmentCommand from '../../schemas/enrollment-command.schema.json' with { type: 'json' };
import enrollmentRequest from '../../schemas/enrollment-request.schema.json' with { type: 'json' };
import errorEnvelope from '../../schemas/error-envelope.schema.json' with { type: 'json' };
import eventsQuery from '../../schemas/events-query.schema.json' with { type: 'json' };
import eventsStreamQuery from '../../schemas/events-stream-query.schema.json' with { type: 'json' };
import fleetPath from '../../schemas/fleet-path.schema.json' with { type: 'json' };
import noQuery from '../../schemas/no-query.schema.json' with { type: 'json' };
import projectPath from '../../schemas/project-path.schema.json' with { type: 'json' };
import type * as T from '../generated/schema-types.js';

/** Every schema by its `$id`; the registry checks at start that each key is the file's own `$id`. */
export const schemasById = {
  'canonical-event-page.schema.json': canonicalEventPage,
  'canonical-event.schema.json': canonicalEvent,
  'cursor-pagination-meta.schema.json': cursorPaginationMeta,
  'device-path.schema.json': devicePath,
  'edge-policy-accepted.schema.json': edgePolicyAccepted,
  'edge-policy-command.schema.json': edgePolicyCommand,
  'edge-policy-patch.schema.json': edgePolicyPatch,
  'edge-policy-value.schema.json': edgePolicyValue,
  'enrollment-accepted.schema.json': enrollmentAccepted,
  'enrollment-command.schema.json': enrollmentCommand,
  'enrollment-request.schema.json': enrollmentRequest,
  'error-envelope.schema.json': errorEnvelope,
  'events-query.schema.json': eventsQuery,
  'events-stream-query.schema.json': eventsStreamQuery,
  'fleet-path.schema.json': fleetPath,
  'no-query.schema.json': noQuery,
  'project-path.schema.json': projectPath,
} as const satisfies Record<SchemaId, { $id: string }>;

/** Schema `$id` → the type its valid instances have. */
export interface SchemaTypes {
  'canonical-event-page.schema.json': T.CanonicalEventPageResponse;
  'canonical-event.schema.json': T.CanonicalEvent;
  'cursor-pagination-meta.schema.json': T.CursorPaginationMeta;
  'device-path.schema.json': T.DevicePath;
  'edge-policy-accepted.schema.json': T.EdgePolicyAccepted;
  'edge-policy-command.schema.json': T.EdgePolicyCommand;
  'edge-policy-patch.schema.json': T.EdgePolicyPatch;
  'edge-policy-value.schema.json': T.EdgePolicyValue;
  'enrollment-accepted.schema.json': T.EnrollmentAccepted;
  'enrollment-command.schema.json': T.EnrollmentCommand;
  'enrollment-request.schema.json': T.EnrollmentRequest;
  'error-envelope.schema.json': T.ErrorEnvelope;
  'events-query.schema.json': T.EventsQuery;
  'events-stream-query.schema.json': T.EventsStreamQuery;
  'fleet-path.schema.json': T.FleetPath;
  'no-query.schema.json': T.NoQuery;
  'project-path.schema.json': T.ProjectPath;
}

export type SchemaId = keyof SchemaTypes;
