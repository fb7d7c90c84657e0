import { randomBytes } from 'node:crypto';

export const STORE_KINDS = ['chdb', 'clickhouse-server'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/**
 * TEST_STORES picks the stores the integration suites run on (a comma-separated list);
 * unset means both. An unknown name fails the run, so a typo cannot skip a store.
 */
export function storesUnderTest(env: NodeJS.ProcessEnv = process.env): StoreKind[] {
  const raw = env['TEST_STORES'];
  if (raw === undefined || raw.trim() === '') return [...STORE_KINDS];
  const names = raw.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!(STORE_KINDS as readonly string[]).includes(name)) throw new Error(`TEST_STORES takes ${STORE_KINDS.join(', ')}; got "${name}"`);
  }
  return names as StoreKind[];
}

/** The gateway environment that puts its store on `kind`: chDB in its data directory, or a database of its own on the server. */
export function storeEnvironment(kind: StoreKind, clickhouseUrl: string | undefined): Record<string, string> {
  if (kind === 'chdb') return {};
  if (clickhouseUrl === undefined) throw new Error('the clickhouse-server store needs a ClickHouse server, and the infrastructure has none');
  return {
    CLICKHOUSE_URL: clickhouseUrl,
    CLICKHOUSE_DATABASE: `test_${randomBytes(5).toString('hex')}`,
    CLICKHOUSE_REQUEST_TIMEOUT_MS: '3000',
    CURSOR_SECRET: randomBytes(32).toString('hex'),
  };
}

/**
 * Skips the calling suite (from a mocha hook or test, given its `this`) when TEST_STORES
 * leaves the ClickHouse server out: the user's choice, said in the output so a run that
 * skipped it cannot pass for one that ran it.
 */
export function skipUnlessServerStoreTested(context: Mocha.Context): void {
  if (storesUnderTest().includes('clickhouse-server')) return;
  console.log('      TEST_STORES leaves out the ClickHouse server: skipped by choice');
  context.skip();
}
