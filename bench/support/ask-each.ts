/** A page the bench asks of a gateway: its URL and the organization it asks for. */
export interface PageRequest {
  readonly url: string;
  readonly orgId: string;
}

/**
 * Each of `requests` asked once, `connections` at a time, each answer read whole; the
 * first that is not a 200 fails the call, and the others stop asking too: a scenario's
 * failure stops the gateway under them.
 */
export async function askEach(requests: readonly PageRequest[], headers: (orgId: string) => Record<string, string>, connections: number): Promise<void> {
  let next = 0;
  const asker = async () => {
    for (let r = requests[next++]; r !== undefined; r = requests[next++]) {
      const res = await fetch(r.url, { headers: headers(r.orgId) });
      if (res.status !== 200) {
        next = requests.length;
        throw new Error(`${r.url}: ${res.status} ${await res.text()}`);
      }
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: connections }, asker));
}
