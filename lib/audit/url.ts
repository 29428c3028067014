import type { AuditQueryInput } from './log';

/** The audit page's URL for a filter combination (and a page cursor): shareable, and parsed by the same schema. */
export const AUDIT_FILTER_KEYS = ['actor', 'action', 'intent', 'from', 'to', 'includeReplay'] as const;

export function auditHref(filters: Partial<Record<(typeof AUDIT_FILTER_KEYS)[number] | 'cursor', string | undefined>>): string {
  const params = new URLSearchParams();
  for (const key of [...AUDIT_FILTER_KEYS, 'cursor'] as const) {
    const value = filters[key];
    if (value) params.set(key, value);
  }
  const qs = params.toString();
  return qs ? `/audit?${qs}` : '/audit';
}

/** The first value of each known key, empty values dropped (a submitted empty field means "any"). */
export function auditParams(search: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of [...AUDIT_FILTER_KEYS, 'cursor'] as const) {
    const raw = search[key];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (value) out[key] = value;
  }
  return out satisfies AuditQueryInput as Record<string, string>;
}
