/** The organization and project of a value that parses as an event; undefined fields where it does not. */
export interface LetterScope {
  readonly org: string | undefined;
  readonly project: string | undefined;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Reads `org_id` and `project_id` from a JSON object value; a value that is not one has no scope. */
export function scopeOf(value: Buffer | null): LetterScope {
  if (value === null) return { org: undefined, project: undefined };
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { org: undefined, project: undefined };
    const record = parsed as Record<string, unknown>;
    return { org: text(record['org_id']), project: text(record['project_id']) };
  } catch {
    return { org: undefined, project: undefined };
  }
}
