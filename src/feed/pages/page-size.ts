export const PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;

/** The spec clamps the requested page size instead of rejecting it. */
export function clampPageSize(requested: number | undefined): number {
  if (requested === undefined) return PAGE_SIZE.default;
  return Math.min(PAGE_SIZE.max, Math.max(PAGE_SIZE.min, requested));
}
