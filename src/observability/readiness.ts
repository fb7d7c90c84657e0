/** One dependency the process needs to do its work; check() rejects when it cannot. */
export interface ReadinessProbe {
  readonly name: string;
  check(): Promise<void>;
}

/** A probe's own reason for not being ready, safe to show; any other failure reads "not reachable". */
export class NotReady extends Error {
  override readonly name = 'NotReady';
}
