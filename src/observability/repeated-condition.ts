import type { Logger } from './logger.js';

/**
 * A condition that recurs for as long as it lasts (a store that refuses every batch, each
 * retried with backoff), logged as an operator reads it during an outage
 * (docs/decisions/outage-logs.md): one line when it begins, with its cause; while it
 * lasts, at most one summary every `summaryEveryMs` (how often it recurred, since when, and
 * the oldest thing it holds back); one line when it ends. Vector's rate-limited internal
 * logs are the model. Summaries are written as occurrences come, so a condition that stops
 * recurring without ending writes nothing more until it does.
 */
export interface RepeatedCondition {
  /**
   * It happened (again). `heldSince` is the time (ms since the epoch) of the oldest thing it
   * holds back, when there is one: the summaries report the oldest across occurrences.
   */
  occurred(cause: unknown, context?: Readonly<Record<string, unknown>>, heldSince?: number): void;
  /** It is over: one line with how long it lasted and how often it recurred, if it had begun. */
  ended(context?: Readonly<Record<string, unknown>>): void;
  /** Whether it has begun and not ended. */
  readonly active: boolean;
}

export interface RepeatedConditionOptions {
  readonly logger: Logger;
  /** What the condition is, as the lines name it: "the store refuses batches". */
  readonly what: string;
  /** The least time between two summaries while it lasts. */
  readonly summaryEveryMs?: number;
  readonly now?: () => number;
}

export const SUMMARY_EVERY_MS = 10_000;

/**
 * The cause as one line of text, its own causes after it: what an operator needs to read,
 * without the stack a line that made an outage's log unreadable.
 */
export function causeText(cause: unknown): string {
  const parts: string[] = [];
  for (let at: unknown = cause; at !== undefined && parts.length < 5; at = at instanceof Error ? at.cause : undefined) {
    parts.push(at instanceof Error ? at.message : typeof at === 'string' ? at : JSON.stringify(at));
  }
  return parts.join(': ');
}

export function createRepeatedCondition(options: RepeatedConditionOptions): RepeatedCondition {
  const { logger, what } = options;
  const every = options.summaryEveryMs ?? SUMMARY_EVERY_MS;
  const now = options.now ?? Date.now;
  let began: number | undefined;
  let lastLine = 0;
  let occurrences = 0;
  let sinceLine = 0;
  let oldestHeld: number | undefined;

  return {
    occurred(cause, context = {}, heldSince) {
      const at = now();
      occurrences += 1;
      sinceLine += 1;
      if (heldSince !== undefined) oldestHeld = Math.min(oldestHeld ?? heldSince, heldSince);
      const held = oldestHeld === undefined ? {} : { oldestHeldMs: at - oldestHeld };
      if (began === undefined) {
        began = at;
        lastLine = at;
        sinceLine = 0;
        logger.warn({ cause: causeText(cause), ...context, ...held }, `${what}: began; retrying`);
        return;
      }
      if (at - lastLine < every) return;
      logger.warn({ cause: causeText(cause), ...context, ...held, occurrences: sinceLine, lastingMs: at - began }, `${what}: still retrying`);
      lastLine = at;
      sinceLine = 0;
    },
    ended(context = {}) {
      if (began === undefined) return;
      logger.info({ ...context, occurrences, lastingMs: now() - began }, `${what}: ended`);
      began = undefined;
      occurrences = 0;
      sinceLine = 0;
      oldestHeld = undefined;
    },
    get active() {
      return began !== undefined;
    },
  };
}
