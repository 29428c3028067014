import { listQuery } from '@/lib/console/list-query';
import { DomainError } from '@/lib/shared/errors';
import type { IntentListFilters } from '@/lib/intents/keys';
import { encodeCursor, listIntents, type ListQueryInput } from '@/lib/intents/queries';
import type { Intent } from '@/lib/shared/intent-types';

/** The list query of the Intents page's filters (the URL's nulls become absent parameters). */
export function listInput(filters: IntentListFilters): ListQueryInput {
  return {
    status: filters.status ?? undefined,
    q: filters.q || undefined,
    source: filters.source ?? undefined,
    from: filters.from ?? undefined,
    to: filters.to ?? undefined,
    contention: filters.contention ?? undefined,
    contentionOperation: filters.contentionOperation ?? undefined,
    contentionFrom: filters.contentionFrom ?? undefined,
    contentionTo: filters.contentionTo ?? undefined,
    stuck: filters.stuck ?? undefined,
    order: filters.order ?? undefined,
    cursor: filters.cursor ?? undefined,
    limit: filters.limit,
  };
}

/** Where the intent page's links lead: back to the list it was opened from, and to that list's rows around it. */
export type ListNavigation = { back: string; previous: string | null; next: string | null };

/**
 * The rows before and after `intent` in the list `filters` describe, in its order: one keyset read each way from
 * the intent's own position (the list's cursor), so they cost what a page of one costs. A search the list cannot
 * answer in time leaves them out rather than failing the page.
 */
export async function listNavigation(intent: Pick<Intent, 'id' | 'updatedAt'>, filters: IntentListFilters): Promise<ListNavigation> {
  const query = listQuery(filters);
  const base = { ...listInput(filters), cursor: encodeCursor(intent), limit: 1 };
  const oldest = filters.order === 'oldest';
  const neighbour = async (order: 'newest' | 'oldest') => {
    try {
      const [row] = (await listIntents({ ...base, order })).items;
      return row ? `/intents/${row.id}${query}` : null;
    } catch (err) {
      if (err instanceof DomainError) return null;
      throw err;
    }
  };
  const [next, previous] = await Promise.all([neighbour(oldest ? 'oldest' : 'newest'), neighbour(oldest ? 'newest' : 'oldest')]);
  return { back: `/intents${query}`, previous, next };
}
