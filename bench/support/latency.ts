/** p50, p99 and p99.9 of latencies in milliseconds (sorts the array in place). */
export function summarize(latencies: number[]): { p50Ms: number; p99Ms: number; p999Ms: number } {
  latencies.sort((a, b) => a - b);
  const at = (p: number) => (latencies.length === 0 ? NaN : Number(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(2)));
  return { p50Ms: at(0.5), p99Ms: at(0.99), p999Ms: at(0.999) };
}
