import { describe, expect, it } from 'vitest';
import { defaultTarget, describeChoice, planBulk, targetChoices, type Selected } from './bulk-plan';

const sel = (...statuses: Selected['status'][]): Selected[] => statuses.map((status, i) => ({ id: `id-${i}`, status }));

describe('bulk status plan', () => {
  it('separates the intents that move, those already there, and those the state machine refuses', () => {
    const plan = planBulk(sel('RECEIVED', 'COMPLETED', 'NORMALIZED', 'FAILED'), 'NORMALIZED');
    expect(plan.moving.map((i) => i.id)).toEqual(['id-0']);
    expect(plan.already.map((i) => i.id)).toEqual(['id-2']);
    expect(plan.blocked.map((b) => [b.intent.id, b.allowed])).toEqual([
      ['id-1', []],
      ['id-3', ['RECEIVED']],
    ]);
  });

  it('counts, for every status, how many of the selection can move there', () => {
    const choices = targetChoices(sel('RECEIVED', 'RECEIVED', 'PROCESSED'));
    const byStatus = Object.fromEntries(choices.map((c) => [c.status, describeChoice(c)]));
    expect(byStatus).toEqual({
      RECEIVED: 'none can move',
      NORMALIZED: '2 of 3 can move',
      PROCESSED: 'none can move',
      CORRECTED: '1 of 3 can move',
      COMPLETED: '1 of 3 can move',
      FAILED: 'all 3 can move',
    });
    expect(describeChoice(targetChoices(sel('PROCESSED', 'COMPLETED')).find((c) => c.status === 'COMPLETED')!)).toBe('1 can move, 1 already there');
    expect(describeChoice(targetChoices(sel('COMPLETED', 'COMPLETED')).find((c) => c.status === 'COMPLETED')!)).toBe('all already there');
  });

  it('preselects only an unambiguous forward step every selected intent can take, never FAILED or a terminal guess', () => {
    expect(defaultTarget(sel('RECEIVED', 'RECEIVED'))).toBe('NORMALIZED');
    expect(defaultTarget(sel('FAILED'))).toBe('RECEIVED');
    expect(defaultTarget(sel('PROCESSED', 'CORRECTED'))).toBe('COMPLETED');
    // Two possible steps: the operator chooses.
    expect(defaultTarget(sel('PROCESSED'))).toBeNull();
    // Nothing but FAILED suits both.
    expect(defaultTarget(sel('RECEIVED', 'NORMALIZED'))).toBeNull();
    expect(defaultTarget(sel('COMPLETED'))).toBeNull();
    expect(defaultTarget([])).toBeNull();
  });
});
