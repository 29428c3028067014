import type { IntentStatus } from '@/generated/prisma/enums';

export type { IntentStatus };

export const INTENT_STATUSES = ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED', 'COMPLETED', 'FAILED'] as const satisfies readonly IntentStatus[];

/** The intent state machine (docs/LOCKING.md). Anything not listed is an invalid transition; COMPLETED is terminal. */
export const TRANSITIONS: Readonly<Record<IntentStatus, readonly IntentStatus[]>> = {
  RECEIVED: ['NORMALIZED', 'FAILED'],
  NORMALIZED: ['PROCESSED', 'FAILED'],
  PROCESSED: ['CORRECTED', 'COMPLETED', 'FAILED'],
  CORRECTED: ['COMPLETED', 'FAILED'],
  FAILED: ['RECEIVED'],
  COMPLETED: [],
};

export function canTransition(from: IntentStatus, to: IntentStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function allowedNextStatuses(from: IntentStatus): readonly IntentStatus[] {
  return TRANSITIONS[from];
}

export function isTerminal(status: IntentStatus): boolean {
  return TRANSITIONS[status].length === 0;
}

/** A correction is refused on COMPLETED and FAILED intents; it moves PROCESSED to CORRECTED and keeps the rest. */
export function statusAfterCorrection(status: IntentStatus): IntentStatus | null {
  if (status === 'COMPLETED' || status === 'FAILED') return null;
  return status === 'PROCESSED' ? 'CORRECTED' : status;
}

export function transitionLabel(from: IntentStatus, to: IntentStatus): string {
  return `${from}->${to}`;
}
