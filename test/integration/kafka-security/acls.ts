import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes, type Kafka } from 'kafkajs';
import { defaultTransactionalIdPrefix } from '../../../src/ingest/dead-letter-writer.js';
import { commandTopicList, type CommandTopicNames } from '../../support/command-topics.js';

/** The names one deployment uses: its topics and the ingest group. */
export interface Deployment {
  readonly events: string;
  /** Each catalogue entry's command topic. */
  readonly commands: CommandTopicNames;
  readonly deadLetter: string;
  readonly group: string;
}

export interface Grant {
  readonly resource: 'topic' | 'group' | 'cluster' | 'transactional-id';
  /** A literal name (the cluster's is kafka-cluster), or a prefix where `prefixed`. */
  readonly name: string;
  readonly prefixed?: boolean;
  readonly operation: 'READ' | 'WRITE' | 'CREATE' | 'DESCRIBE' | 'DESCRIBE_CONFIGS';
}

const topic = (name: string, operation: Grant['operation']): Grant => ({ resource: 'topic', name, operation });

/** ROLE=gateway with KAFKA_CREATE_TOPICS=false, as docs/kafka-contract.md lists it. */
export function gatewayGrants(d: Deployment): Grant[] {
  return commandTopicList(d.commands).flatMap((name) => [topic(name, 'WRITE'), topic(name, 'DESCRIBE_CONFIGS')]);
}

/** ROLE=consumer with KAFKA_CREATE_TOPICS=false, as docs/kafka-contract.md lists it. */
export function consumerGrants(d: Deployment): Grant[] {
  return [
    ...[d.events, ...commandTopicList(d.commands)].map((name) => topic(name, 'READ')),
    topic(d.deadLetter, 'WRITE'),
    topic(d.deadLetter, 'DESCRIBE_CONFIGS'),
    { resource: 'group', name: d.group, operation: 'READ' },
    // The dead letters' transactions, one transactional id per input partition under the default prefix (WRITE implies DESCRIBE).
    { resource: 'transactional-id', name: defaultTransactionalIdPrefix(d.group), operation: 'WRITE', prefixed: true },
  ];
}

/** What KAFKA_CREATE_TOPICS=true adds: CREATE on each topic the role uses. */
export function createGrants(topics: readonly string[]): Grant[] {
  return topics.map((name) => topic(name, 'CREATE'));
}

const RESOURCE = { topic: AclResourceTypes.TOPIC, group: AclResourceTypes.GROUP, cluster: AclResourceTypes.CLUSTER, 'transactional-id': AclResourceTypes.TRANSACTIONAL_ID } as const;

/** Creates the ACLs as the super user: `user` may do what `grants` allow, from any host. */
export async function grant(admin: Kafka, user: string, grants: readonly Grant[]): Promise<void> {
  const client = admin.admin();
  await client.connect();
  try {
    await client.createAcls({
      acl: grants.map((g) => ({
        resourceType: RESOURCE[g.resource],
        resourceName: g.name,
        resourcePatternType: g.prefixed === true ? ResourcePatternTypes.PREFIXED : ResourcePatternTypes.LITERAL,
        principal: `User:${user}`,
        host: '*',
        operation: AclOperationTypes[g.operation],
        permissionType: AclPermissionTypes.ALLOW,
      })),
    });
  } finally {
    await client.disconnect();
  }
}

/** Everything on topics, groups and transactional ids whose names start with `prefix`: for tests that are not about ACLs. */
export async function grantPrefix(admin: Kafka, user: string, prefix: string): Promise<void> {
  const client = admin.admin();
  await client.connect();
  try {
    await client.createAcls({
      acl: [AclResourceTypes.TOPIC, AclResourceTypes.GROUP, AclResourceTypes.TRANSACTIONAL_ID].map((resourceType) => ({
        resourceType,
        resourceName: prefix,
        resourcePatternType: ResourcePatternTypes.PREFIXED,
        principal: `User:${user}`,
        host: '*',
        operation: AclOperationTypes.ALL,
        permissionType: AclPermissionTypes.ALLOW,
      })),
    });
  } finally {
    await client.disconnect();
  }
}
