'use client';

import { useRef, useState } from 'react';
import type { Intent } from '@/lib/shared/intent-types';

/**
 * The rows picked for a bulk change, kept as they were when picked. Shift-click selects (or deselects) the whole
 * range from the last row clicked, as in a mail client.
 */
export function useRowSelection(items: Intent[]) {
  const [selected, setSelected] = useState<Map<string, Intent>>(new Map());
  const lastClicked = useRef<number | null>(null);
  const allSelected = items.length > 0 && items.every((i) => selected.has(i.id));
  const toggle = (intent: Intent, index: number, range: boolean) => {
    const from = range && lastClicked.current !== null ? Math.min(lastClicked.current, index) : index;
    const to = range && lastClicked.current !== null ? Math.max(lastClicked.current, index) : index;
    lastClicked.current = index;
    setSelected((prev) => {
      const next = new Map(prev);
      const select = !prev.has(intent.id);
      for (const row of items.slice(from, to + 1)) {
        if (select) next.set(row.id, row);
        else next.delete(row.id);
      }
      return next;
    });
  };
  const toggleAll = () => setSelected(allSelected ? new Map() : new Map(items.map((i) => [i.id, i])));
  const deselect = (ids: string[]) =>
    setSelected((prev) => {
      const next = new Map(prev);
      for (const id of ids) next.delete(id);
      return next;
    });
  // The selection keeps the rows as they were when picked; the list's latest copy (refetched after a bulk change,
  // or when live refresh resumes) knows their status better.
  const latest = new Map(items.map((i) => [i.id, i]));
  const selectedNow = [...selected.values()].map((i) => latest.get(i.id) ?? i);
  return { selected, allSelected, selectedNow, toggle, toggleAll, deselect, clear: () => setSelected(new Map()) };
}
