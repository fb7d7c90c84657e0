import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { hs256Token, uuid } from '../../support/factories.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { readToEnd } from '../../support/kafka-topics.js';
import { storeEnvironment } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './kafka-suite.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';

const CLIENTS = 20;
const GRACE_MS = 5_000;

interface Load {
  /** Enrollment ids answered 2xx. */
  readonly acknowledged: string[];
  /** Every HTTP status answered. */
  readonly statuses: number[];
  /** Resolves when every client has stopped: each stops at its first request the server no longer takes. */
  readonly done: Promise<void>;
}

/** CLIENTS loops sending enrollments back to back, each on its own keep-alive connection, until the server goes away. */
function enrollUntilGone(gateway: GatewayProcess, path: () => string, headers: Record<string, string>): Load {
  const acknowledged: string[] = [];
  const statuses: number[] = [];
  const client = async (i: number) => {
    for (;;) {
      let res: Response;
      try {
        res = await fetch(`${gateway.url}${API_PREFIX}${path()}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ display_name: `client ${i}` }),
        });
      } catch {
        return; // refused or closed: the server has stopped taking requests
      }
      statuses.push(res.status);
      const body = (await res.json()) as { data: EnrollmentAccepted };
      if (res.status === 202) acknowledged.push(body.data.enrollment_id);
    }
  };
  return { acknowledged, statuses, done: Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i))).then(() => undefined) };
}

describeOnEachStore('SIGTERM to a gateway process under load', function (suite) {
  this.timeout(180_000);
  let gateway: GatewayProcess | undefined;
  afterEach(() => gateway?.dispose());

  it(`stops taking requests, answers those in flight, flushes the producer and exits 0 within SHUTDOWN_GRACE_MS, with ${CLIENTS} keep-alive clients`, async () => {
    const { infra, kafka, store } = suite();
    const run = randomBytes(4).toString('hex');
    const commands = commandTopicNames((name) => `${name}.shutdown.${run}`);
    const enrollments = commands.enrollmentCommands;
    const secret = randomBytes(32).toString('hex');
    gateway = await startGatewayProcess({
      KAFKA_BROKERS: infra.brokers.join(','),
      ...storeEnvironment(store, infra.clickhouse?.url),
      AUTH_JWT_SECRET: secret,
      EVENTS_TOPICS: `platform.events.shutdown.${run}`,
      ...commandTopicEnvironment(commands),
      EVENTS_DLQ_TOPIC: `platform.events.dlq.shutdown.${run}`,
      KAFKA_CONSUMER_GROUP: `core-gateway-ingest-shutdown-${run}`,
      KAFKA_TOPIC_PARTITIONS: '3',
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    const orgId = uuid();
    const projectId = uuid();
    const headers = { authorization: `Bearer ${await hs256Token(secret, { orgIds: [orgId] })}`, 'org-id': orgId };
    const load = enrollUntilGone(gateway, () => `/projects/${projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, headers);

    await waitFor('the load under way', async () => (load.acknowledged.length >= 200 ? true : undefined), 60_000);
    gateway.signal('SIGTERM');
    const exit = await gateway.exited;
    await load.done;

    // The process's own deadline exits 1 past SHUTDOWN_GRACE_MS plus its flush bound, so 0 means it drained in time.
    expect(exit, gateway.output().slice(-3000)).to.deep.equal({ code: 0, signal: null });
    expect(gateway.logLines().map((line) => line.msg)).to.include('stopped');
    expect(load.statuses.filter((status) => status !== 202), 'answers other than 202').to.deep.equal([]);

    const onTopic = new Set(
      (await readToEnd(kafka, [enrollments])).map((m) => (JSON.parse(m.value!) as { command_id: string }).command_id),
    );
    const lost = load.acknowledged.filter((id) => !onTopic.has(id));
    expect(lost, `${lost.length} of ${load.acknowledged.length} acknowledged enrollments are not on the topic`).to.deep.equal([]);
  });
});
