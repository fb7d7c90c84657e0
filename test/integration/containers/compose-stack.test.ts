import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { API_PREFIX } from '../../../src/http/app.js';
import { uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { waitFor } from '../../support/wait-for.js';
import { enroll, firstPage, newTenant } from '../stack/stack-helpers.js';
import { cli, startCompose, type ComposeStack } from './compose-stack.js';

/**
 * The production shape as a user deploys it: the image built from the Dockerfile, and Kafka,
 * ClickHouse, the gateway and the consumer as the compose file declares them. The images come
 * from the file's defaults or from KAFKA_IMAGE, CLICKHOUSE_IMAGE, NODE_IMAGE and GATEWAY_IMAGE
 * (npm run containers:setup names local stand-ins where no registry is reachable).
 */
describe('the image and the compose file, run as containers: gateway, consumer, Kafka and ClickHouse', function () {
  this.timeout(120_000);
  // As a user would: secrets of their own, passed in through the environment (or .env).
  const secret = randomBytes(32).toString('base64');
  let stack: ComposeStack | undefined;
  const running = (): ComposeStack => {
    if (stack === undefined) throw new Error('the stack did not start');
    return stack;
  };
  const jsonLines = async (service: string): Promise<Record<string, unknown>[]> =>
    (await running().logs(service))
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  before(async function () {
    // The build (cached layers after the first), then Kafka and ClickHouse healthy, then the two roles.
    this.timeout(1_200_000);
    stack = await startCompose({
      file: 'docker-compose.yml',
      env: { ...process.env, AUTH_JWT_SECRET: secret, CURSOR_SECRET: randomBytes(32).toString('base64') },
      log: (line) => console.log(`      compose: ${line}`),
    });
    const gateway = stack.url('gateway', 8080);
    await waitFor('the gateway to answer /readyz with 200', async () => {
      const res = await request('GET', `${gateway}/readyz`).catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    }, 180_000, 500);
  });

  after(async function () {
    this.timeout(120_000);
    await stack?.remove();
  });

  it('runs the gateway and the consumer as an unprivileged user', async () => {
    const { Config } = (JSON.parse(await cli(['inspect', running().container('gateway')])) as { Config: { User: string } }[])[0]!;
    expect(Config.User).to.equal('node');
    for (const service of ['gateway', 'consumer']) {
      const uid = (await cli(['exec', running().container(service), 'id', '-u'])).trim();
      expect(uid, `${service}'s uid`).to.match(/^\d+$/).and.not.equal('0');
    }
  });

  it('answers /readyz with 200 once Kafka and ClickHouse are reachable', async () => {
    const res = await request('GET', `${running().url('gateway', 8080)}/readyz`);
    expect(res.status, res.text).to.equal(200);
  });

  it('refuses a token signed with another secret', async () => {
    const stranger = await newTenant(randomBytes(32).toString('base64'));
    const answer = await enroll(running().url('gateway', 8080), stranger);
    expect(answer.status, answer.text).to.equal(401);
  });

  it('accepts an enrollment (202) that the consumer stores and the feed then shows', async () => {
    const gateway = running().url('gateway', 8080);
    const tenant = await newTenant(secret);
    const answer = await enroll(gateway, tenant);
    expect(answer.status, answer.text).to.equal(202);
    const enrollmentId = answer.body.data.enrollment_id;
    const event = await waitFor('the enrollment in the feed', async () => (await firstPage(gateway, tenant)).find((e) => e.correlation_id === enrollmentId), 60_000, 250);
    expect(event).to.include({ domain: 'devices', entity: 'enrollment', action: 'queued', device_id: tenant.deviceId });
  });

  it('takes a token minted inside the gateway container, as the README shows', async () => {
    const orgId = uuid();
    const token = (await cli(['exec', running().container('gateway'), 'node', 'dist/scripts/mint-token.js', '--org', orgId, '--scope', 'events:read'])).trim();
    const res = await request('GET', `${running().url('gateway', 8080)}${API_PREFIX}/projects/${uuid()}/events?limit=1`, {
      headers: { authorization: `Bearer ${token}`, 'org-id': orgId },
    });
    expect(res.status, res.text).to.equal(200);
  });

  it('drains on SIGTERM: stops taking connections, answers the request in flight, and exits 0', async () => {
    const gateway = running().url('gateway', 8080);
    const container = running().container('gateway');
    const tenant = await newTenant(secret);
    const requestId = `drain-${uuid()}`;
    const body = JSON.stringify({ display_name: 'Pump in flight' });
    const head = body.slice(0, 10);

    // An enrollment whose body is half sent when the signal arrives.
    const socket = connect(Number(new URL(gateway).port), '127.0.0.1');
    socket.on('error', () => undefined);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST ${API_PREFIX}/projects/${tenant.projectId}/fleets/${tenant.fleetId}/devices/${tenant.deviceId}/enroll HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nAuthorization: ${tenant.headers.authorization}\r\nORG-ID: ${tenant.orgId}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${head}`,
    );

    await cli(['kill', '--signal', 'TERM', container]);
    // The process has the signal once a new connection is no longer served as ready.
    await waitFor('the gateway to stop answering /readyz with 200', async () => {
      const res = await request('GET', `${gateway}/readyz`).catch(() => undefined);
      return res?.status === 200 ? undefined : true;
    }, 10_000, 50);

    socket.write(body.slice(head.length));
    await socketClosed;
    const answer = Buffer.concat(received).toString('utf8');
    expect(answer.split('\r\n')[0], answer).to.equal('HTTP/1.1 202 Accepted');

    const exitCode = (await cli(['wait', container], 60_000)).trim();
    expect(exitCode, await running().logs('gateway')).to.equal('0');
    const gatewayLines = await jsonLines('gateway');
    expect(gatewayLines.find((l) => l['msg'] === 'shutting down'), 'the shutdown line').to.include({ signal: 'SIGTERM' });
    expect(gatewayLines.some((l) => l['msg'] === 'stopped'), 'the stopped line').to.equal(true);

    // Accepted during the drain, so published: the consumer stores it.
    await waitFor('the consumer to store the enrollment accepted during the drain', async () =>
      (await jsonLines('consumer')).find((l) => l['requestId'] === requestId && l['msg'] === 'command event stored'), 60_000, 500);
  });
});
