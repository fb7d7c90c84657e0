import { expect } from 'chai';
import { connect } from 'node:net';
import type { ErrorEnvelope } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { storeEnvironment, skipUnlessServerStoreTested } from '../../support/stores.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clickhouseServer } from './gateways.js';

describe('a gateway shutting down [clickhouse-server]', function () {
  this.timeout(60_000);
  let gw: TestGateway | undefined;
  let closed = false;

  before(async function () {
    // chDB binds one data directory per process, and the suite's chDB gateway holds it.
    skipUnlessServerStoreTested(this);
    gw = await startTestGateway({ ...storeEnvironment('clickhouse-server', (await clickhouseServer()).url), OPS_PORT: '0', SHUTDOWN_GRACE_MS: '1500' });
  });
  after(async () => {
    if (!closed) await gw?.close();
  });

  it('fails /readyz from its first moment, and cuts a request still in flight once the grace is over', async () => {
    const { url, opsUrl } = gw!.runtime;
    const tenant = gw!.tenant();
    const headers = await tenant.headers();
    // An enrollment whose body never finishes arriving: it stays in flight until the server gives up on it.
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST ${API_PREFIX}/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nAuthorization: ${headers.authorization}\r\nORG-ID: ${headers['org-id']}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"display_`,
    );
    expect((await request('GET', new URL('/readyz', opsUrl).toString())).status, 'ready before the shutdown').to.equal(200);

    closed = true;
    const closing = gw!.close();
    const notReady = await waitFor('/readyz to answer 503', async () => {
      const res = await request<ErrorEnvelope>('GET', new URL('/readyz', opsUrl).toString());
      return res.status === 503 ? res.body : undefined;
    });
    expect(notReady.detail).to.include('process: shutting down');

    await closing;
    await socketClosed;
  });
});
