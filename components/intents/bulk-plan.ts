import { allowedNextStatuses, canTransition, INTENT_STATUSES, type IntentStatus } from '@/lib/shared/intent-states';

/**
 * What a bulk status change would do to the selected intents, from the statuses the page knows (the list may be a
 * little behind while live refresh is paused). The server re-checks under its locks and stays the final authority;
 * this only lets the operator see, before asking, which intents can move and which would get the whole change refused.
 */
export type Selected = { id: string; status: IntentStatus };

export type BulkPlan<T extends Selected = Selected> = {
  target: IntentStatus;
  /** Will change status. */
  moving: T[];
  /** Already in the target status: accepted, changes nothing. */
  already: T[];
  /** Cannot move there: the bulk change is all-or-nothing, so any of these gets all of it refused. */
  blocked: { intent: T; allowed: readonly IntentStatus[] }[];
};

export function planBulk<T extends Selected>(intents: readonly T[], target: IntentStatus): BulkPlan<T> {
  const plan: BulkPlan<T> = { target, moving: [], already: [], blocked: [] };
  for (const intent of intents) {
    if (intent.status === target) plan.already.push(intent);
    else if (canTransition(intent.status, target)) plan.moving.push(intent);
    else plan.blocked.push({ intent, allowed: allowedNextStatuses(intent.status) });
  }
  return plan;
}

export type TargetChoice = { status: IntentStatus; moving: number; already: number; blocked: number; total: number };

/** For each status, how many of the selected intents can move there (every status, in the state machine's order). */
export function targetChoices(intents: readonly Selected[]): TargetChoice[] {
  return INTENT_STATUSES.map((status) => {
    const plan = planBulk(intents, status);
    return { status, moving: plan.moving.length, already: plan.already.length, blocked: plan.blocked.length, total: intents.length };
  });
}

/** "3 of 3 can move", "2 can move, 1 already there", "none can move": the option text after the status name. */
export function describeChoice(choice: TargetChoice): string {
  const { moving, already, blocked, total } = choice;
  if (moving === 0 && blocked === 0) return total === 1 ? 'already there' : 'all already there';
  if (moving === 0) return total === 1 ? 'cannot move' : 'none can move';
  if (blocked === 0) return already ? `${moving} can move, ${already} already there` : total === 1 ? 'can move' : `all ${total} can move`;
  return `${moving} of ${total} can move`;
}

/** A choice that changes something and that no selected intent would get refused. */
export function isClean(choice: TargetChoice): boolean {
  return choice.moving > 0 && choice.blocked === 0;
}

/**
 * The target to preselect, or null to make the operator choose: only when exactly one forward step moves every
 * selected intent (all RECEIVED → NORMALIZED, all FAILED → RECEIVED). FAILED is never preselected, and neither is
 * a choice between two steps (PROCESSED → CORRECTED or COMPLETED).
 */
export function defaultTarget(intents: readonly Selected[]): IntentStatus | null {
  if (intents.length === 0) return null;
  const candidates = targetChoices(intents).filter((c) => c.status !== 'FAILED' && c.moving === c.total);
  return candidates.length === 1 ? candidates[0].status : null;
}

