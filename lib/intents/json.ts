import { createHash } from 'node:crypto';
import { canonicalJson, type JsonObject } from '@/lib/shared/json';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The correction id is derived from the intent and the canonical diff: the same correction twice is one. */
export function correctionIdFor(intentId: string, diff: JsonObject): string {
  return sha256Hex(`${intentId}\n${canonicalJson(diff)}`);
}
