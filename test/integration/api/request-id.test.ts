import { expect } from 'chai';
import { describeOnEachStore } from './gateways.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describeOnEachStore('X-Request-Id on every answer', (gateway) => {
  const feedOf = async (headers: Record<string, string>) => {
    const gw = await gateway();
    const tenant = gw.tenant();
    return gw.call('GET', `/projects/${tenant.projectId}/events`, { headers: { ...(await tenant.headers()), ...headers } });
  };

  it('returns the caller\'s id when it is short and printable', async () => {
    const res = await feedOf({ 'x-request-id': 'lb-7f3a:42/req.9' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('lb-7f3a:42/req.9');
  });

  it('makes a new id when the request has none, a different one each time', async () => {
    const [a, b] = await Promise.all([feedOf({}), feedOf({})]);
    expect(a.headers.get('x-request-id')).to.match(UUID);
    expect(b.headers.get('x-request-id')).to.match(UUID);
    expect(a.headers.get('x-request-id')).not.to.equal(b.headers.get('x-request-id'));
  });

  for (const [what, id] of [
    ['spaces', 'two words'],
    ['over 128 characters', 'x'.repeat(129)],
    ['a log-forging quote', 'a"b'],
  ] as const) {
    it(`replaces an id with ${what} by a new one`, async () => {
      const res = await feedOf({ 'x-request-id': id });
      expect(res.headers.get('x-request-id')).to.match(UUID);
    });
  }

  it('is on error answers too', async () => {
    const gw = await gateway();
    const res = await gw.call('GET', `/projects/${gw.tenant().projectId}/events`, { headers: { 'x-request-id': 'denied-1' } });
    expect(res.status).to.equal(401);
    expect(res.headers.get('x-request-id')).to.equal('denied-1');
  });
});
