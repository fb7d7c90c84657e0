import type { ErrorEnvelope } from '../generated/schema-types.js';

export interface SuccessEnvelope<D, M> {
  readonly ok: 1;
  readonly data: D;
  readonly meta: M;
}

export function success<D>(data: D): SuccessEnvelope<D, null>;
export function success<D, M>(data: D, meta: M): SuccessEnvelope<D, M>;
export function success<D, M>(data: D, meta?: M): SuccessEnvelope<D, M | null> {
  return { ok: 1, data, meta: meta ?? null };
}

export function failure(message: ErrorEnvelope['message'], detail: string): ErrorEnvelope {
  return { ok: 0, message, detail };
}
