import type { LockRow } from './types';

/**
 * One row per lock target. A statement on a table takes the same lock on each of its indexes (an UPDATE of intents
 * takes RowExclusiveLock on intents and on every intents_* index), which would list the table five times over. A
 * lock on an index is folded into its table's row when the same backend holds (or waits for) the table in the same
 * mode; the index names stay on the row. An index lock with no such table row is kept as it is.
 */
export function foldIndexLocks(rows: readonly LockRow[]): LockRow[] {
  const key = (pid: number, table: string, mode: string, granted: boolean) => `${pid}\u0000${table}\u0000${mode}\u0000${granted}`;
  const tables = new Map<string, LockRow>();
  for (const row of rows) {
    if (row.lockType === 'relation' && row.relation && !row.indexOf) {
      tables.set(key(row.pid, row.relation, row.mode, row.granted), { ...row, indexes: [...row.indexes] });
    }
  }
  const result: LockRow[] = [];
  const placed = new Set<LockRow>();
  for (const row of rows) {
    if (row.lockType === 'relation' && row.relation && !row.indexOf) {
      const copy = tables.get(key(row.pid, row.relation, row.mode, row.granted))!;
      if (!placed.has(copy)) {
        placed.add(copy);
        result.push(copy);
      }
      continue;
    }
    const table = row.lockType === 'relation' && row.indexOf ? tables.get(key(row.pid, row.indexOf, row.mode, row.granted)) : undefined;
    if (table && row.relation) table.indexes.push(row.relation);
    else result.push(row);
  }
  for (const row of result) row.indexes.sort();
  return result;
}
