import { z } from 'zod';
import { INTENT_STATUSES } from '@/lib/shared/intent-states';
import { SERIES_KEYS, type SeriesKey } from '@/lib/contention/series';
import { FILTER_PARAMS, type IntentListFilters } from '@/lib/intents/keys';
import { isInstant } from '@/lib/search/instant';
import { storable } from '@/lib/shared/text';
import { STUCK_DURATION } from '@/lib/search/stuck';

/**
 * The Intents page's URL (`?status=&q=&source=&from=&to=&contention=&contentionOperation=&contentionFrom=&contentionTo=&cursor=`): shareable, and parsed with Zod like any other input. A value
 * that does not parse is dropped rather than failing the page — a stale link still opens the list.
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
  status: z.preprocess(first, z.enum(INTENT_STATUSES).nullable().catch(null)).default(null),
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
