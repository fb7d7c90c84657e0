import type { EdgePolicyAccepted, EdgePolicyCommand, EdgePolicyPatch, FleetPath } from '../generated/schema-types.js';
import { commandHeaders, type CommandContext, type CommandEnvironment } from './command-context.js';
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
  return {
    publish: {
      command: { topic, key: path.fleet_id, commandId, value: command, headers: commandHeaders('edge-policy-command.schema.json', context) },
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
