import { z } from 'zod';
import { readDb } from '@/lib/db/read';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import { intentIdSchema } from '@/lib/shared/fields';
import { parseInput } from '@/lib/shared/validation';
import { TIMELINE_SOURCES, type SourcedEntry, type TimelineSource } from './sources';
import { timelineQuerySchema, type TimelinePage, type TimelineQuery } from './types';

/**
 * One intent's timeline: the entries of every source (sources.ts) merged oldest first, a page at a time.
 *
 * Merging: two entries that both carry a write position (write_seq) are ordered by it; otherwise by time, then by
 * which comes first within one row. Each source is read after its own cursor key, `limit + 1` rows at most, so a
 * page costs one indexed range read per source whatever the length of the history; the cursor carries every
 * source's last key. All sources are read in one snapshot (REPEATABLE READ), so a page never shows an event whose
 * change it does not show.
 */
export function compareEntries(a: SourcedEntry, b: SourcedEntry): number {
  if (a.seq !== null && b.seq !== null) {
    if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  } else if (a.atMs !== b.atMs) {
    return a.atMs - b.atMs;
  }
  return a.tie - b.tie;
}

/** Merges the sources' entries (each in its own order) into one ordered list: a stable sort keeps each source's order on ties. */
export function mergeEntries(lists: readonly SourcedEntry[][]): SourcedEntry[] {
  return lists.flat().sort(compareEntries);
}

/** Each source's last key (its own format: `<write_seq>:<id>` for the tables here). */
const cursorSchema = z.record(z.string().max(40), z.string().regex(/^[\w:.-]{1,200}$/));
type Cursor = z.infer<typeof cursorSchema>;

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(raw: string | undefined): Cursor {
  if (raw === undefined) return {};
  try {
    const parsed = cursorSchema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // Not JSON: refused below like any other cursor this endpoint did not hand out.
  }
  throw new ValidationError([{ field: 'cursor', message: 'is not a timeline cursor' }]);
}

export async function getIntentTimeline(idInput: unknown, queryInput: TimelineQuery = {}, sources: readonly TimelineSource[] = TIMELINE_SOURCES): Promise<TimelinePage> {
  const id = parseInput(intentIdSchema, idInput, 'id').toLowerCase();
  const { limit, cursor: rawCursor } = parseInput(timelineQuerySchema, queryInput);
  const cursor = decodeCursor(rawCursor);
  return (await readDb()).$transaction(
    async (tx) => {
      const [exists] = await tx.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM intents WHERE id = ${id}::uuid`;
      if (exists.n === 0) throw new NotFoundError(`Intent ${id}`, { id });
      const lists: SourcedEntry[][] = [];
      // One after another: a transaction is one connection.
      for (const source of sources) lists.push(tagged(source.name, await source.load({ intentId: id, after: cursor[source.name] ?? null, limit: limit + 1, tx })));
      const merged = mergeEntries(lists);
      const page = merged.slice(0, limit);
      if (merged.length <= limit) return { items: page.map((e) => e.entry), nextCursor: null };
      const next: Cursor = { ...cursor };
      for (const e of page) next[(e as Tagged).source] = e.key;
      return { items: page.map((e) => e.entry), nextCursor: encodeCursor(next) };
    },
    { isolationLevel: 'RepeatableRead' },
  );
}

type Tagged = SourcedEntry & { source: string };

function tagged(source: string, entries: SourcedEntry[]): Tagged[] {
  return entries.map((e) => ({ ...e, source }));
}
