/** What a gateway the bench started reports on its /metrics, read as the bench's figures need it. */
import { parseMetrics, samplesOf } from '../../test/support/metrics-text.js';

/**
 * The gateway's samples from its /metrics, and the value of the one among them named
 * `name` with `labels`. A counter's labelled series appears only once it first counts, so
 * `absent` is what a series not there yet reads as (undefined: none may be missing).
 */
export async function gatewayMetrics(gatewayUrl: string): Promise<(name: string, labels?: Readonly<Record<string, string>>, absent?: number) => number> {
  const samples = parseMetrics(await (await fetch(`${gatewayUrl}/metrics`)).text());
  return (name, labels = {}, absent) => {
    const [sample, ...more] = samplesOf(samples, name, labels);
    if (sample === undefined && absent !== undefined) return absent;
    if (sample === undefined || more.length > 0) throw new Error(`the gateway reports no single ${name} ${JSON.stringify(labels)}`);
    return sample.value;
  };
}

/** The gateway's feed_first_pages_total by source, the times its watch lost track of the store, and the pages it read again or brought up to date when written. */
export async function firstPageCounts(gatewayUrl: string): Promise<{ memory: number; store: number; lostTrack: number; refreshed: number; merged: number }> {
  const metric = await gatewayMetrics(gatewayUrl);
  return {
    // Page reads of either kind: first pages, and pages by cursor cut from a kept first page or read.
    memory: metric('feed_first_pages_total', { source: 'memory' }, 0) + metric('feed_cursor_pages_total', { source: 'memory' }, 0),
    store: metric('feed_first_pages_total', { source: 'store' }, 0) + metric('feed_cursor_pages_total', { source: 'store' }, 0),
    lostTrack: metric('feed_first_pages_lost_track_total'),
    refreshed: metric('feed_first_pages_refreshed_total'),
    merged: metric('feed_first_pages_merged_total'),
  };
}
