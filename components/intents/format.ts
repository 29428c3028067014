import type { JsonObject } from '@/lib/shared/json';

/** One line of the payload's top-level fields, for the list: `kind: payment · amount: 12.5 · …`. */
export function payloadSummary(payload: JsonObject, max = 140): string {
  const parts = Object.entries(payload).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const text = parts.join(' · ');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
