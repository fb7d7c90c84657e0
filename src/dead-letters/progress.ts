import type { Tally } from './tally.js';

/** How often a progress line is printed when the output is not a terminal. */
const PLAIN_EVERY_MS = 5000;
const TTY_EVERY_MS = 200;

export interface Progress {
  update(t: Tally): void;
  done(): void;
}

const line = (t: Tally, verb: string) => `${verb}: read ${t.read}, selected ${t.selected}, sent ${t.sent}, loop guard ${t.loopGuarded}, truncated ${t.truncated}`;

/**
 * One line rewritten in place on a terminal; on anything else (a log, a pipe) a plain
 * line every few seconds, so a log file does not fill with carriage returns.
 */
export function progressOn(out: NodeJS.WriteStream, verb: string): Progress {
  const tty = out.isTTY === true;
  let last = 0;
  let drawn = false;
  return {
    update(t) {
      const now = Date.now();
      if (now - last < (tty ? TTY_EVERY_MS : PLAIN_EVERY_MS)) return;
      last = now;
      if (tty) {
        out.write(`\r\x1b[2K${line(t, verb)}`);
        drawn = true;
      } else {
        out.write(`${line(t, verb)}\n`);
      }
    },
    done() {
      if (drawn) out.write('\n');
    },
  };
}
