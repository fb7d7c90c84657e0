import { expect } from 'chai';
import { createCoreApiClient, type FetchLike } from '../../../client/index.js';
import { catalogue } from '../../../src/commands/catalogue.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { uuid } from '../../support/factories.js';

/** Every function of the client's command groups (all but the feed's), with where it is. */
function commandMethods(client: object): [string, (...args: unknown[]) => Promise<unknown>][] {
  return Object.entries(client)
    .filter(([group]) => group !== 'events')
    .flatMap(([group, api]: [string, Record<string, unknown>]) =>
      Object.entries(api)
        .filter((entry): entry is [string, (...args: unknown[]) => Promise<unknown>] => typeof entry[1] === 'function')
        .map(([name, method]): [string, (...args: unknown[]) => Promise<unknown>] => [`${group}.${name}`, method]),
    );
}

describe('typed client against the catalogue of commands', () => {
  it('has one method for every catalogue entry, sending its method to its path, and none for a command the gateway lacks', async () => {
    const sent: { method: string; path: string }[] = [];
    const fetch: FetchLike = async (url, init) => {
      sent.push({ method: String(init.method), path: new URL(url).pathname.slice(API_PREFIX.length) });
      // Not the command's answer: the client refuses it, which ends the call after one request.
      return new Response(JSON.stringify({ ok: 1, data: {}, meta: null }), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const client = createCoreApiClient({ baseUrl: 'http://gateway.test', token: 't', orgId: uuid(), fetch, retry: { attempts: 1 } });
    const routeOf = (entry: (typeof catalogue)[number]) => new RegExp(`^${entry.http.path.replace(/:[a-z_]+/g, '[^/]+')}$`);
    const covered = new Map<string, string>();
    for (const [name, method] of commandMethods(client)) {
      const before = sent.length;
      // Path ids first, then a body and options: every command method takes its path's ids first.
      await method(uuid(), uuid(), uuid(), {}, {}).catch(() => undefined);
      const request = sent[before];
      expect(request, `${name} sent nothing`).to.not.equal(undefined);
      const entry = catalogue.find((candidate) => candidate.http.method.toUpperCase() === request!.method && routeOf(candidate).test(request!.path));
      expect(entry, `${name} sends ${request!.method} ${request!.path}, which no catalogue entry serves`).to.not.equal(undefined);
      covered.set(entry!.name, name);
    }
    expect([...covered.keys()].sort(), `client methods: ${JSON.stringify(Object.fromEntries(covered))}`).to.deep.equal(catalogue.map((entry) => entry.name).sort());
  });
});
