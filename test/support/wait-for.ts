/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs` with `what`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, lastError === undefined ? undefined : { cause: lastError });
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
