/**
 * Kept first pages show another process's writes up to STREAM_SETTLE_MS + 2 × STREAM_POLL_MS
 * late (docs/decisions/dashboard-polling.md), and many tests write through another process
 * (a consumer of their own, a direct insert) and then read once: the gateways tests start
 * read the store for every page unless a test sets FEED_FIRST_PAGE_MAX_AGE_MS. The kept
 * pages have tests of their own (test/integration/api/feed-first-page-cache.test.ts); the
 * stack and container suites run the default.
 */
export const KEEP_NO_FIRST_PAGES = { FEED_FIRST_PAGE_MAX_AGE_MS: '0' } as const;
