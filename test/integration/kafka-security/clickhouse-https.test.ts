import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer, type Server } from 'node:tls';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { canonicalEvent } from '../../support/factories.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { readyz } from './helpers.js';
import { secureBroker, sharedClickHouse } from './secure-broker.js';

/**
 * The local ClickHouse server cannot serve HTTPS itself (clickhouse-local opens only its
 * TCP and HTTP listeners), so TLS ends in front of it, as at a load balancer: the client
 * side, CLICKHOUSE_URL=https://... with CLICKHOUSE_CA_FILE, is what runs for real.
 */
async function tlsFrontOf(httpUrl: string): Promise<{ server: Server; url: string; handshakes: () => number }> {
  const upstream = new URL(httpUrl);
  // The suite's throw-away CA signed the broker's key and certificate for 127.0.0.1; they serve here too.
  const pem = readFileSync(join(secureBroker().securityDir, 'broker.pem'));
  let handshakes = 0;
  const sockets = new Set<Socket>();
  const server = createServer({ key: pem, cert: pem }, (client) => {
    handshakes += 1;
    const backend = connect(Number(upstream.port), upstream.hostname);
    for (const s of [client, backend]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.pipe(backend).pipe(client);
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, handshakes: () => handshakes };
}

describe('ClickHouse over HTTPS with a CA of its own', function () {
  this.timeout(90_000);
  let front: Awaited<ReturnType<typeof tlsFrontOf>>;
  let gateway: TestGateway | undefined;

  before(async () => {
    front = await tlsFrontOf((await sharedClickHouse()).url);
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });
  after(() => {
    front.server.close();
  });

  const storeEnv = () => ({
    CLICKHOUSE_URL: front.url,
    CLICKHOUSE_DATABASE: `https_${randomBytes(5).toString('hex')}`,
    CURSOR_SECRET: randomBytes(32).toString('hex'),
  });

  it('stores and serves the feed through an https:// CLICKHOUSE_URL trusting CLICKHOUSE_CA_FILE', async () => {
    gateway = await startTestGateway({ ...storeEnv(), CLICKHOUSE_CA_FILE: secureBroker().caFile });
    expect((await readyz(gateway.runtime.url)).status).to.equal(200);
    const tenant = gateway.tenant();
    const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
    await gateway.seed([event]);
    const feed = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, { headers: await tenant.headers() });
    expect(feed.body.data.items.map((e) => e.id)).to.deep.equal([event.id]);
    expect(front.handshakes(), 'TLS handshakes at the front').to.be.above(0);
  });

  it("does not start without that CA: Node's built-in CAs do not trust the server", async () => {
    const error = await startTestGateway(storeEnv()).then(
      (g) => {
        gateway = g;
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(error, 'the start should fail').to.be.instanceOf(Error);
    let chain = '';
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain += `${e.message} | `;
    expect(chain).to.match(/certificate/i);
  });
});
