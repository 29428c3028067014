import { z } from 'zod';
import { FIELD_KINDS } from './field-edits';

/**
 * A reviewer's correction in progress — the draft, and the conflict it ran into — kept in the tab's sessionStorage
 * so a reload (or a crash of the tab's renderer) does not lose the work or the decision in front of them. Per
 * intent; cleared once the correction is applied or discarded. Read back through Zod: a stored value that no
 * longer fits is ignored, never trusted.
 */
const json = z.record(z.string(), z.unknown());
const fieldEdit = z.object({ path: z.array(z.union([z.string(), z.number().int().nonnegative()])).min(1), kind: z.enum(FIELD_KINDS), input: z.string() });
const draftSchema = z.object({
  // A draft kept before the field editor existed was typed as JSON: it opens there.
  mode: z.enum(['fields', 'json']).default('json'),
  edits: z.array(fieldEdit).default([]),
  text: z.string(),
  reason: z.string(),
  source: z.string(),
  key: z.string(),
  opened: z.object({ version: z.number().int(), payload: json }),
  conflict: z
    .object({
      submission: z.object({ diff: json, reason: z.string(), source: z.string(), expectedVersion: z.number().int(), idempotencyKey: z.string(), metadata: json }),
      base: json,
      changes: json,
      reviewText: z.string(),
    })
    .nullable(),
});
export type CorrectionDraft = z.infer<typeof draftSchema>;

const storageKey = (intentId: string) => `bridge:correction-draft:${intentId}`;

function storage(): Storage | null {
  try {
    return typeof window === 'undefined' ? null : window.sessionStorage;
  } catch {
    return null; // storage disabled (privacy settings): drafts simply do not survive a reload
  }
}

export function loadDraft(intentId: string): CorrectionDraft | null {
  const raw = storage()?.getItem(storageKey(intentId));
  if (!raw) return null;
  try {
    const parsed = draftSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function saveDraft(intentId: string, draft: CorrectionDraft): void {
  try {
    storage()?.setItem(storageKey(intentId), JSON.stringify(draft));
  } catch {
    // Full or disabled storage: the draft lives only in the page, as before.
  }
}

export function clearDraft(intentId: string): void {
  storage()?.removeItem(storageKey(intentId));
}
