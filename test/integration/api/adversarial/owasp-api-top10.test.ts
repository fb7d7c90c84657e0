import { expect } from 'chai';
import { uuid } from '../../../support/factories.js';
import {
  AUTH_FAILURE_BURST,
  clientAddress,
  describeInEveryKeyMode,
  expectRefusal,
  feedWith,
  send,
  type Answer,
  type ModeGateway,
} from './key-modes.js';

/**
 * The OWASP API Security Top 10 (2023), one describe per risk that applies, against a
 * real gateway in each of the four key modes. Each probe is a request an outside tester
 * sends; it covers a finding of the review (issue 35) or a probe the review found holding.
 */
const enrollPath = (projectId: string) => `/projects/${projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`;

async function countCommands(mg: ModeGateway, commandId: string): Promise<number> {
  const ch = mg.gateway.config.clickhouse!;
  const query = `SELECT count() FROM ${ch.database}.command_log WHERE command_id = '${commandId}' FORMAT TabSeparated`;
  // As the gateway connects: a server in a container has a user and password (testcontainers mode).
  const credentials: Record<string, string> = ch.username === undefined ? {} : { authorization: `Basic ${Buffer.from(`${ch.username}:${ch.password ?? ''}`).toString('base64')}` };
  const res = await fetch(`${ch.url}/?query=${encodeURIComponent(query)}`, { headers: credentials });
  expect(res.status, 'ClickHouse answered the count').to.equal(200);
  return Number((await res.text()).trim());
}

describeInEveryKeyMode('OWASP API Top 10 probes', (mg: () => ModeGateway) => {
  const bearer = (token: string) => `Bearer ${token}`;

  describe('API1:2023 broken object level authorization', () => {
    it('refuses an ORG-ID the token does not name, and reads nothing of it', async () => {
      const mine = uuid();
      const theirs = uuid();
      expectRefusal(await feedWith(mg(), await mg().token(mine), theirs), 403, /organization/);
    });

    it('keeps an Idempotency-Key to its organization: the same key in another answers its own enrollment', async () => {
      const key = `shared-${uuid()}`;
      const path = enrollPath(uuid());
      const answers: Answer[] = [];
      for (const org of [uuid(), uuid()]) {
        answers.push(await send(mg().gateway, 'POST', path, { headers: { authorization: bearer(await mg().token(org)), 'org-id': org, 'idempotency-key': key }, body: {} }));
      }
      for (const a of answers) expect(a.status, a.text).to.equal(202);
      const ids = answers.map((a) => (a.body?.data as { enrollment_id: string }).enrollment_id);
      expect(ids[0]).to.not.equal(ids[1]);
    });
  });

  describe('API2:2023 broken authentication', () => {
    it('refuses two Authorization headers with 401, whichever comes first', async () => {
      const org = uuid();
      const good = bearer(await mg().token(org));
      for (const pair of [[good, 'Bearer garbage'], ['Bearer garbage', good], [good, good]]) {
        const answer = await send(mg().gateway, 'GET', `/projects/${uuid()}/events`, { headers: { authorization: pair, 'org-id': org } });
        expectRefusal(answer, 401, /repeated/);
        expect(answer.headers['www-authenticate']).to.match(/^Bearer /);
        expect(answer.body?.message).to.deep.include({ 'header.authorization': 'must be sent once' });
      }
    });

    it('refuses two ORG-ID headers with 401, whichever comes first', async () => {
      const org = uuid();
      const token = bearer(await mg().token(org));
      for (const pair of [[org, uuid()], [uuid(), org], [org, org]]) {
        const answer = await send(mg().gateway, 'GET', `/projects/${uuid()}/events`, { headers: { authorization: token, 'org-id': pair } });
        expectRefusal(answer, 401, /repeated/);
        expect(answer.body?.message).to.deep.include({ 'header.org-id': 'must be sent once' });
      }
    });

    it('answers 429 with Retry-After to a client whose failures are used up, before verifying even a valid token', async () => {
      const org = uuid();
      const client = clientAddress();
      const known = bearer(await mg().token(org));
      expect((await feedWith(mg(), known.slice(7), org, { client })).status).to.equal(200);
      const forged = (await mg().token(org)).replace(/.{4}$/, 'AAAA');
      const statuses: number[] = [];
      let refusal: Answer | undefined;
      // Bounded: the burst plus what refills (one every 10 s here) while they are sent.
      for (let i = 0; i < AUTH_FAILURE_BURST * 4 && refusal === undefined; i += 1) {
        const answer = await feedWith(mg(), forged, org, { client });
        statuses.push(answer.status);
        if (answer.status === 429) refusal = answer;
      }
      expect(refusal, `statuses: ${statuses.join(',')}`).to.not.equal(undefined);
      expect(statuses.slice(0, AUTH_FAILURE_BURST).every((s) => s === 401), statuses.join(',')).to.equal(true);
      expectRefusal(refusal!, 429, /failed authentications/);
      expect(refusal!.headers['retry-after']).to.match(/^[1-9]\d*$/);

      // A token never verified before is not verified now: it would be a 200 if it were.
      const fresh = await feedWith(mg(), await mg().token(org), org, { client });
      if (fresh.status !== 429) expect.fail(`a new valid token from a refused client answered ${fresh.status}; the bucket may have refilled: ${statuses.join(',')}`);
      // A token the gateway has already verified costs no key operation, and passes.
      expect((await feedWith(mg(), known.slice(7), org, { client })).status).to.equal(200);
      // Another client is untouched.
      expect((await feedWith(mg(), await mg().token(org), org)).status).to.equal(200);
    });

    it('believes X-Forwarded-For only from the trusted proxy: a client that varies it directly is still counted as itself', async () => {
      const org = uuid();
      const forged = (await mg().token(org)).replace(/.{4}$/, 'AAAA');
      let limited: Answer | undefined;
      for (let i = 0; i < AUTH_FAILURE_BURST * 4 && limited === undefined; i += 1) {
        const answer = await feedWith(mg(), forged, org, { direct: '127.0.0.1', headers: { 'x-forwarded-for': clientAddress() } });
        if (answer.status === 429) limited = answer;
        else expect(answer.status).to.equal(401);
      }
      expect(limited, 'a 429 for the direct client').to.not.equal(undefined);
    });
  });

  describe('API3:2023 broken object property level authorization', () => {
    it('refuses a field the operation does not take (no mass assignment of org_id or status)', async () => {
      const org = uuid();
      const answer = await send(mg().gateway, 'POST', enrollPath(uuid()), {
        headers: { authorization: bearer(await mg().token(org)), 'org-id': org },
        body: { display_name: 'x', org_id: uuid(), status: 'active' },
      });
      expectRefusal(answer, 400);
    });
  });

  describe('API4:2023 unrestricted resource consumption', () => {
    it('refuses a body over 64 KiB with 413 and a JSON nesting past 32 levels with 400', async () => {
      const org = uuid();
      const headers = { authorization: bearer(await mg().token(org)), 'org-id': org };
      expectRefusal(await send(mg().gateway, 'POST', enrollPath(uuid()), { headers, body: { display_name: 'x'.repeat(70_000) } }), 413);
      expectRefusal(await send(mg().gateway, 'POST', enrollPath(uuid()), { headers, body: `${'['.repeat(40)}${']'.repeat(40)}` }), 400);
    });
  });

  describe('API5:2023 broken function level authorization', () => {
    it('refuses each operation to a token without its permission', async () => {
      const org = uuid();
      const readOnly = bearer(await mg().token(org, { scope: 'events:read' }));
      expectRefusal(await send(mg().gateway, 'POST', enrollPath(uuid()), { headers: { authorization: readOnly, 'org-id': org }, body: {} }), 403, /devices:enroll/);
      expectRefusal(
        await send(mg().gateway, 'PATCH', `/projects/${uuid()}/fleets/${uuid()}/edge/policy`, { headers: { authorization: readOnly, 'org-id': org }, body: {}, }),
        403,
        /edge-policy:write/,
      );
      const enrollOnly = await mg().token(org, { scope: 'devices:enroll' });
      expectRefusal(await feedWith(mg(), enrollOnly, org), 403, /events:read/);
    });
  });

  describe('API6:2023 unrestricted access to sensitive business flows', () => {
    it('publishes one command for an Idempotency-Key across retries after the acknowledgement, and answers each the same', async () => {
      const org = uuid();
      const headers = { authorization: bearer(await mg().token(org)), 'org-id': org, 'idempotency-key': `retry-${uuid()}` };
      const path = enrollPath(uuid());
      const answers: Answer[] = [];
      for (let i = 0; i < 3; i += 1) answers.push(await send(mg().gateway, 'POST', path, { headers, body: { display_name: 'Pump' } }));
      for (const a of answers) expect(a.status, a.text).to.equal(202);
      expect(new Set(answers.map((a) => JSON.stringify(a.body?.data))).size).to.equal(1);
      const commandId = (answers[0]!.body?.data as { enrollment_id: string }).enrollment_id;
      expect(await countCommands(mg(), commandId)).to.equal(1);
    });
  });

  describe('API8:2023 security misconfiguration', () => {
    it('answers refusals in the envelope with the bearer challenge, and no stack, SQL or token text', async () => {
      const org = uuid();
      const token = (await mg().token(org, { exp: undefined })).toString();
      const answer = await feedWith(mg(), token, org);
      expectRefusal(answer, 401);
      expect(answer.headers['www-authenticate']).to.match(/^Bearer /);
      expect(answer.text).to.not.include(token.split('.')[1]!);
    });

    it('reads a date before year 100 as written: a 400 naming the field, not a 1900s date', async () => {
      const org = uuid();
      for (const since of ['0001-01-01T00:00:00Z', '0099-12-31T23:59:59Z']) {
        const answer = await send(mg().gateway, 'GET', `/projects/${uuid()}/events?since=${encodeURIComponent(since)}`, {
          headers: { authorization: bearer(await mg().token(org)), 'org-id': org },
        });
        expectRefusal(answer, 400);
        expect(Object.keys(answer.body?.message as object)).to.deep.equal(['query.since']);
      }
    });
  });

  describe('API9:2023 improper inventory management', () => {
    it('serves only v1: another version is a 404 in the envelope', async () => {
      const org = uuid();
      const answer = await send(mg().gateway, 'GET', `/../v2/projects/${uuid()}/events`, { headers: { authorization: bearer(await mg().token(org)), 'org-id': org } });
      expectRefusal(answer, 404);
    });
  });
});
