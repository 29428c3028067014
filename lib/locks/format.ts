/** Durations for people: "850 ms", "12 s", "4 min 05 s", "2 h 10 min". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const v = Math.max(0, ms);
  if (v < 1000) return `${Math.round(v)} ms`;
  // Under ten seconds a tenth tells two waits apart (1.9 s against 2.0 s, where whole seconds said 1 s and 2 s).
  if (v < 10_000) return `${(Math.floor(v / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(v / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** How long ago `iso` was, measured on the database's clock (`nowIso`, the snapshot's time), not the browser's. */
export function ageAt(iso: string | null | undefined, nowIso: string): string {
  if (!iso) return '—';
  return formatDuration(new Date(nowIso).getTime() - new Date(iso).getTime());
}
