import { z } from 'zod';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';
import { SERIES_KEYS, type SeriesKey } from '@/lib/contention/series';
import { FILTER_PARAMS, type IntentListFilters } from '@/lib/intents/keys';
import { isInstant } from '@/lib/search/instant';
import { storable } from '@/lib/shared/text';
import { STUCK_DURATION } from '@/lib/search/stuck';

/**
 * The Intents page's URL (`?status=&q=&source=&from=&to=&contention=&contentionOperation=&contentionFrom=&contentionTo=&cursor=`): shareable, and parsed with Zod like any other input. A value
 * that does not parse is dropped rather than failing the page — a stale link still opens the list — and the page says
 * which were dropped and why (ignoredIntentFilters), since a list quietly wider than the link asked for is worse.
 */
export const PAGE_SIZE = 50;

const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);

const isoOrNull = z
  .string()
  .trim()
  .max(40)
  .refine(isInstant)
  .nullable()
  .catch(null);

const urlFilters = z.object({
  // Any case: `failed` in a hand-typed link means FAILED.
  status: z.preprocess((v) => (typeof first(v) === 'string' ? (first(v) as string).trim().toUpperCase() : first(v)), z.enum(INTENT_STATUSES).nullable().catch(null)).default(null),
  q: z.preprocess(first, z.string().trim().max(200).refine(storable).catch('')).default(''),
  cursor: z.preprocess(first, z.string().regex(/^[A-Za-z0-9_-]{1,500}$/).nullable().catch(null)).default(null),
  source: z.preprocess(first, z.string().trim().min(1).max(255).refine(storable).nullable().catch(null)).default(null),
  from: z.preprocess(first, isoOrNull).default(null),
  to: z.preprocess(first, isoOrNull).default(null),
  contention: z.preprocess(first, z.enum(SERIES_KEYS as [SeriesKey, ...SeriesKey[]]).nullable().catch(null)).default(null),
  contentionOperation: z.preprocess(first, z.string().regex(/^[a-z][a-z_]{0,63}$/).nullable().catch(null)).default(null),
  contentionFrom: z.preprocess(first, isoOrNull).default(null),
  contentionTo: z.preprocess(first, isoOrNull).default(null),
  stuck: z.preprocess(first, z.string().regex(STUCK_DURATION).nullable().catch(null)).default(null),
  order: z.preprocess(first, z.literal('oldest').nullable().catch(null)).default(null),
});

export function parseIntentFilters(params: Record<string, string | string[] | undefined>): IntentListFilters {
  const parsed = urlFilters.parse(params);
  // A range that ends before it starts is dropped whole rather than answering an empty list.
  const range = parsed.from && parsed.to && Date.parse(parsed.from) > Date.parse(parsed.to) ? { from: null, to: null } : { from: parsed.from, to: parsed.to };
  // The contention filter's refinements mean nothing without the figure; a backwards span is dropped like a range.
  const span = parsed.contentionFrom && parsed.contentionTo && Date.parse(parsed.contentionFrom) > Date.parse(parsed.contentionTo);
  const contention = parsed.contention
    ? { contention: parsed.contention, contentionOperation: parsed.contentionOperation, contentionFrom: span ? null : parsed.contentionFrom, contentionTo: span ? null : parsed.contentionTo }
    : { contention: null, contentionOperation: null, contentionFrom: null, contentionTo: null };
  return { status: parsed.status, q: parsed.q, source: parsed.source, ...range, ...contention, stuck: parsed.stuck, order: parsed.order, cursor: parsed.cursor, limit: PAGE_SIZE };
}

/** The URL for a filter combination; a new status or search always starts from the newest page. */
export function intentsHref(filters: Partial<Omit<IntentListFilters, 'limit'>>): string {
  const params = new URLSearchParams();
  if (filters.status) params.set('status', filters.status);
  for (const k of FILTER_PARAMS) {
    const v = filters[k];
    if (v) params.set(k, v);
  }
  if (filters.order) params.set('order', filters.order);
  if (filters.cursor) params.set('cursor', filters.cursor);
  const qs = params.toString();
  return qs ? `/intents?${qs}` : '/intents';
}

/** A filter of the URL the list did not apply, and why. */
export type IgnoredFilter = { field: string; value: string; why: string };

const WHY: Record<string, string> = {
  status: `must be one of ${INTENT_STATUSES.join(', ')}`,
  q: 'is longer than 200 characters or holds characters that cannot be stored',
  source: 'is longer than 255 characters or holds characters that cannot be stored',
  cursor: 'is not a page of this list',
  from: 'must be a date and time with its zone, such as 2026-11-28T19:00:00Z',
  to: 'must be a date and time with its zone, such as 2026-11-28T19:00:00Z',
  stuck: 'must be a duration such as 15m, 1h, 4h or 1d',
  order: 'must be oldest (or left out, for newest first)',
  contention: `must be one of ${SERIES_KEYS.join(', ')}`,
  contentionOperation: 'must be an operation name such as update_status',
  contentionFrom: 'must be a date and time with its zone',
  contentionTo: 'must be a date and time with its zone',
};

/**
 * The filters `params` asked for that `filters` (parseIntentFilters of the same params) does not apply: a value that
 * did not parse, a range that ends before it starts, the contention filter's refinements without the figure.
 */
export function ignoredIntentFilters(params: Record<string, string | string[] | undefined>, filters: IntentListFilters): IgnoredFilter[] {
  const raw = (k: string): string | null => {
    const v = first(params[k]);
    return typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 80) : null;
  };
  const applied = filters as unknown as Record<string, string | null>;
  const ignored: IgnoredFilter[] = [];
  const parsed = urlFilters.parse(params) as Record<string, string | null>;
  for (const field of Object.keys(WHY)) {
    const value = raw(field);
    if (value === null || applied[field]) continue;
    if (parsed[field]) {
      // It parsed, and was dropped for what it goes with.
      const why =
        field.startsWith('contention') && !filters.contention ? 'applies only with the contention filter' : 'the range ends before it starts, so neither end applies';
      ignored.push({ field, value, why });
    } else {
      ignored.push({ field, value, why: WHY[field] });
    }
  }
  return ignored;
}
