/** One dependency the process needs to do its work; check() rejects when it cannot. */
export interface ReadinessProbe {
  readonly name: string;
  check(): Promise<void>;
}
