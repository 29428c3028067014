import type { KeyboardEvent } from 'react';

/**
 * The keyboard on the results, as in a mail client: j / ↓ and k / ↑ move between rows, Enter opens the row's intent
 * (`open` gets its id).
 */
export function onResultsKey(e: KeyboardEvent<HTMLDivElement>, open: (intentId: string) => void): void {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const target = e.target as HTMLElement;
  const rows = [...e.currentTarget.querySelectorAll<HTMLTableRowElement>('tbody tr[data-intent-id]')];
  const row = target.closest('tr');
  const at = row ? rows.indexOf(row as HTMLTableRowElement) : -1;
  const step = e.key === 'j' || e.key === 'ArrowDown' ? 1 : e.key === 'k' || e.key === 'ArrowUp' ? -1 : 0;
  if (step && rows.length) {
    e.preventDefault();
    rows[Math.min(rows.length - 1, Math.max(0, at + step))].focus();
  } else if (e.key === 'Enter' && target === row && row.dataset.intentId) {
    e.preventDefault();
    open(row.dataset.intentId);
  }
}
