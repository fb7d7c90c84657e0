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

export interface FirstPageCounts {
  readonly memory: number;
  readonly store: number;
  readonly lostTrack: number;
  readonly refreshed: number;
  readonly merged: number;
  /** Pages dropped to make room for others (feed_first_pages_evicted_total). */
  readonly evicted: number;
  /** Whether the watch follows the store's writes now (feed_first_pages_watched). */
  readonly watched: number;
  /** The watch's polls, and those that took longer than the default STREAM_POLL_MS (500 ms), which leave kept pages unserved. */
  readonly polls: number;
  readonly latePolls: number;
  /** The watch's windows by how they reached the pages (feed_first_pages_watch_windows_total). */
  readonly windows: { readonly rows: number; readonly named: number; readonly all: number };
}

/** The gateway's feed_first_pages_total by source, the times its watch lost track of the store, the pages it read again or brought up to date when written, and how its watch's polls went. */
export async function firstPageCounts(gatewayUrl: string): Promise<FirstPageCounts> {
  const metric = await gatewayMetrics(gatewayUrl);
  const polls = metric('feed_first_pages_watch_poll_seconds_count');
  return {
    // Page reads of either kind: first pages, and pages by cursor cut from a kept first page or read.
    memory: metric('feed_first_pages_total', { source: 'memory' }, 0) + metric('feed_cursor_pages_total', { source: 'memory' }, 0),
    store: metric('feed_first_pages_total', { source: 'store' }, 0) + metric('feed_cursor_pages_total', { source: 'store' }, 0),
    lostTrack: metric('feed_first_pages_lost_track_total'),
    refreshed: metric('feed_first_pages_refreshed_total'),
    merged: metric('feed_first_pages_merged_total'),
    evicted: metric('feed_first_pages_evicted_total'),
    watched: metric('feed_first_pages_watched'),
    polls,
    latePolls: polls - metric('feed_first_pages_watch_poll_seconds_bucket', { le: '0.5' }),
    windows: {
      rows: metric('feed_first_pages_watch_windows_total', { reached: 'rows' }, 0),
      named: metric('feed_first_pages_watch_windows_total', { reached: 'named' }, 0),
      all: metric('feed_first_pages_watch_windows_total', { reached: 'all' }, 0),
    },
  };
}
