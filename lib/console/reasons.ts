import type { IntentStatus } from '@/lib/shared/intent-states';

/**
 * The console asks for a reason on every status change and keeps it in the audit. It is required where the
 * change takes an intent out of processing (FAILED): whoever retries it later needs to know why. The API leaves
 * it optional; the console's status and bulk forms and their server actions apply this rule.
 */
export const REASON_MAX = 500;

export function reasonRequired(to: IntentStatus | string | null | undefined): boolean {
  return to === 'FAILED';
}

/** The problem with `reason` for a change to `to`, in the words the form shows beside the field; null when fine. */
export function reasonProblem(to: IntentStatus | string | null | undefined, reason: unknown): string | null {
  if (reason !== undefined && reason !== null && typeof reason !== 'string') return 'must be text';
  const text = typeof reason === 'string' ? reason.trim() : '';
  if (text.length > REASON_MAX) return `must be at most ${REASON_MAX} characters`;
  if (!text && reasonRequired(to)) return `is required when marking intents ${to}: say why, for whoever retries them`;
  return null;
}

/** The reason to pass on: trimmed, or undefined when none was given. */
export function normaliseReason(reason: unknown): string | undefined {
  return typeof reason === 'string' && reason.trim() ? reason.trim() : undefined;
}

