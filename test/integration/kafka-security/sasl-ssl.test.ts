import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { grantPrefix } from './acls.js';
import { deployment, enroll, findOnTopic, inFeed, readyz, unsecuredJwt } from './helpers.js';
import { secureBroker, secureKafkaEnv, secureTlsEnv } from './secure-broker.js';

/** Users here hold every right on topics and groups under this prefix; least-privilege.test.ts is about ACLs. */
const PREFIX = 'sasl-ssl.';

describe('a gateway on a SASL_SSL broker', function () {
  this.timeout(90_000);
  const gateways: TestGateway[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'core-gateway-sasl-ssl-'));
  let tokenEndpoint: Server | undefined;

  before(async () => {
    await grantPrefix(secureBroker().admin, 'client', PREFIX);
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.close()));
  });
  after(() => {
    tokenEndpoint?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  async function start(env: Record<string, string>): Promise<{ gateway: TestGateway; d: ReturnType<typeof deployment> }> {
    const d = deployment(PREFIX);
    const gateway = await startTestGateway({ ...d.env, ...env });
    gateways.push(gateway);
    return { gateway, d };
  }

  for (const mechanism of ['scram-sha-512', 'scram-sha-256']) {
    it(`is ready with ${mechanism.toUpperCase()} over TLS, and an enrollment is acknowledged, on its topic and in the feed`, async () => {
      const { gateway, d } = await start(secureKafkaEnv('client', mechanism));
      const ready = await readyz(gateway.runtime.url);
      expect(ready.status, ready.text).to.equal(200);

      const tenant = gateway.tenant();
      const { res, deviceId } = await enroll(gateway, tenant);
      expect(res.status, res.text).to.equal(202);
      const command = await findOnTopic(secureBroker().admin, d.commands.enrollmentCommands, (m) => m.key === deviceId);
      expect(JSON.parse(command.value!)).to.deep.include({ command_id: res.body.data.enrollment_id, device_id: deviceId });
      await inFeed(gateway, tenant, deviceId);
    });
  }

  it('is ready with PLAIN over TLS', async () => {
    const { gateway } = await start(secureKafkaEnv('client', 'plain'));
    expect((await readyz(gateway.runtime.url)).status).to.equal(200);
  });

  it('authenticates with an OAUTHBEARER token from a file', async () => {
    const tokenFile = join(scratch, 'token');
    writeFileSync(tokenFile, `${unsecuredJwt('client')}\n`);
    const { gateway } = await start({ ...secureTlsEnv(), KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: tokenFile });
    expect((await readyz(gateway.runtime.url)).status).to.equal(200);
    const tenant = gateway.tenant();
    const { res, deviceId } = await enroll(gateway, tenant);
    expect(res.status, res.text).to.equal(202);
    await inFeed(gateway, tenant, deviceId);
  });

  it('authenticates with an OAUTHBEARER token from a client-credentials endpoint', async () => {
    const asked: string[] = [];
    tokenEndpoint = createServer((req, res) => {
      asked.push(req.headers.authorization ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: unsecuredJwt('client'), token_type: 'Bearer', expires_in: 3600 }));
    });
    await new Promise<void>((done) => tokenEndpoint!.listen(0, '127.0.0.1', done));
    const secretFile = join(scratch, 'client-secret');
    writeFileSync(secretFile, 'gateway-client-secret\n');
    const { gateway } = await start({
      ...secureTlsEnv(),
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTH_TOKEN_URL: `http://127.0.0.1:${(tokenEndpoint.address() as AddressInfo).port}/oauth2/token`,
      KAFKA_SASL_OAUTH_CLIENT_ID: 'core-gateway',
      KAFKA_SASL_OAUTH_CLIENT_SECRET_FILE: secretFile,
    });
    expect((await readyz(gateway.runtime.url)).status).to.equal(200);
    expect(asked.length, 'tokens requested').to.be.at.least(1);
    expect(asked[0]).to.equal(`Basic ${Buffer.from('core-gateway:gateway-client-secret').toString('base64')}`);
  });
});
