import type { PassThrough } from 'node:stream';
import type { TailMessage, TailSink } from '../feed/live-tail.js';

/**
 * Frames a live tail as Server-Sent Events on the response body. Each event is `id:` (its
 * position token) and one `data:` line of canonical event JSON, with no `event:` field, so
 * an EventSource's onmessage receives it. JSON.stringify escapes line breaks inside
 * strings, so the data never spans lines. A batch goes out as one write.
 */
export function createSseSink(out: PassThrough, retryMs: number): TailSink {
  async function write(text: string): Promise<void> {
    if (out.destroyed || out.writableEnded) return;
    if (out.write(text)) return;
    // The client reads slower than events come: wait for room (or for the client to leave).
    await new Promise<void>((resolve) => {
      const go = () => {
        out.off('drain', go);
        out.off('close', go);
        resolve();
      };
      out.on('drain', go);
      out.on('close', go);
    });
  }

  // How long an EventSource waits before it reconnects (with Last-Event-ID) when the stream ends.
  void write(`retry: ${retryMs}\n\n`);

  return {
    events: (batch: readonly TailMessage[]) => write(batch.map((m) => `id: ${m.id}\ndata: ${JSON.stringify(m.event)}\n\n`).join('')),
    heartbeat: () => write(': heartbeat\n\n'),
    end() {
      if (!out.destroyed && !out.writableEnded) out.end();
    },
  };
}
