import type { CanonicalEvent, EdgePolicyAccepted, EdgePolicyCommand, EdgePolicyPatch, FleetPath } from '../generated/schema-types.js';
import { messageHeaders, SOURCE_SERVICE, type CommandContext, type CommandEnvironment } from './command-context.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';

export interface EdgePolicyInput {
  readonly context: CommandContext;
  readonly path: FleetPath;
  /** A JSON Merge Patch (RFC 7386) for the fleet's edge policy. */
  readonly patch: EdgePolicyPatch;
}

export type UpdateEdgePolicy = (input: EdgePolicyInput) => Promise<EdgePolicyAccepted>;

export function buildEdgePolicyUpdate(
  input: EdgePolicyInput,
  topic: string,
  env: CommandEnvironment,
): { publish: PublishRequest; response: EdgePolicyAccepted } {
  const { context, path, patch } = input;
  const commandId = env.newId();
  const acceptedAt = env.now().toISOString();
  const command: EdgePolicyCommand = {
    command_id: commandId,
    type: 'edge-policy.merge-patch',
    schema_version: 1,
    org_id: context.orgId,
    project_id: path.project_id,
    fleet_id: path.fleet_id,
    patch,
    requested_at: acceptedAt,
    requested_by: context.requestedBy,
  };
  const event: CanonicalEvent = {
    id: env.newId(),
    org_id: context.orgId,
    project_id: path.project_id,
    domain: 'edge',
    entity: 'policy',
    action: 'update_queued',
    occurred_at: acceptedAt,
    correlation_id: commandId,
    device_id: null,
    fleet_id: path.fleet_id,
    payload: { command_id: commandId, patch },
    source_service: SOURCE_SERVICE,
    trace_id: context.trace?.traceId ?? null,
    span_id: context.trace?.spanId ?? null,
  };
  return {
    publish: {
      command: { topic, key: path.fleet_id, commandId, value: command, headers: messageHeaders('edge-policy-command.schema.json') },
      event,
    },
    response: { command_id: commandId, ...path, patch, status: 'accepted', accepted_at: acceptedAt },
  };
}

export function createUpdateEdgePolicy(deps: { publisher: CommandPublisher; topic: string; env: CommandEnvironment }): UpdateEdgePolicy {
  return async (input) => {
    const accepted = buildEdgePolicyUpdate(input, deps.topic, deps.env);
    await deps.publisher.publish(accepted.publish);
    return accepted.response;
  };
}
