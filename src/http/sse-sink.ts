import type { PassThrough } from 'node:stream';
import type { ClosingNotice, TailMessage, TailSink } from '../feed/tail/live-tail.js';

/** How long a stream the gateway ended may take to hand its last bytes to a client before its connection is cut. */
export const CLOSING_GRACE_MS = 10_000;

/**
 * Frames a live tail as Server-Sent Events on the response body. Each event is `id:` (its
 * position token) and one `data:` line of canonical event JSON, with no `event:` field, so
 * an EventSource's onmessage receives it. JSON.stringify escapes line breaks inside
 * strings, so the data never spans lines. A batch goes out as one write.
 *
 * When the gateway ends a stream (a client too slow, a shutdown) the last message is an
 * `event: closing` whose data is the error envelope saying why. It has no `id:`, so an
 * EventSource's Last-Event-ID stays the last event it received and its reconnect resumes
 * right after it.
 */
export function createSseSink(out: PassThrough, retryMs: number): TailSink {
  function write(text: string): void {
    if (!out.destroyed && !out.writableEnded) out.write(text);
  }

  // How long an EventSource waits before it reconnects (with Last-Event-ID) when the stream ends.
  write(`retry: ${retryMs}\n\n`);

  return {
    send(batch: readonly TailMessage[]) {
      write(batch.map((m) => `id: ${m.id}\ndata: ${m.json}\n\n`).join(''));
    },
    heartbeat() {
      write(': heartbeat\n\n');
    },
    get queuedBytes() {
      // Koa pipes the body into the response: what the socket would not take stays in the PassThrough.
      return out.destroyed ? 0 : out.writableLength + out.readableLength;
    },
    drained() {
      if (out.destroyed || !out.writableNeedDrain) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const go = () => {
          out.off('drain', go);
          out.off('close', go);
          resolve();
        };
        out.on('drain', go);
        out.on('close', go);
      });
    },
    end(notice?: ClosingNotice) {
      if (out.destroyed || out.writableEnded) return;
      if (notice !== undefined) {
        write(`event: closing\ndata: ${JSON.stringify({ ok: 0, message: notice.message, detail: notice.detail })}\n\n`);
        // A client that reads nothing would hold the queued bytes for ever.
        const cut = setTimeout(() => out.destroy(), CLOSING_GRACE_MS).unref();
        out.once('close', () => clearTimeout(cut));
      }
      out.end();
    },
  };
}
