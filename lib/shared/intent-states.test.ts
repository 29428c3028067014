import { describe, expect, it } from 'vitest';
import {
  INTENT_STATUSES,
  allowedNextStatuses,
  canTransition,
  isTerminal,
  statusAfterCorrection,
  transitionLabel,
  type IntentStatus,
} from './intent-states';

/**
 * The documented state machine (docs/LOCKING.md), copied by hand (not derived from TRANSITIONS): every pair (from, to) not listed is invalid.
 *   RECEIVED   → NORMALIZED, FAILED
 *   NORMALIZED → PROCESSED, FAILED
 *   PROCESSED  → CORRECTED, COMPLETED, FAILED
 *   CORRECTED  → COMPLETED, FAILED
 *   FAILED     → RECEIVED
 *   COMPLETED  → (terminal)
 */
const ALLOWED = new Set([
  'RECEIVED>NORMALIZED',
  'RECEIVED>FAILED',
  'NORMALIZED>PROCESSED',
  'NORMALIZED>FAILED',
  'PROCESSED>CORRECTED',
  'PROCESSED>COMPLETED',
  'PROCESSED>FAILED',
  'CORRECTED>COMPLETED',
  'CORRECTED>FAILED',
  'FAILED>RECEIVED',
]);
const ALL: IntentStatus[] = ['RECEIVED', 'NORMALIZED', 'PROCESSED', 'CORRECTED', 'COMPLETED', 'FAILED'];
const PAIRS = ALL.flatMap((from) => ALL.map((to) => [from, to, ALLOWED.has(`${from}>${to}`)] as const));

describe('state machine (as documented)', () => {
  it('knows exactly the six statuses', () => {
    expect([...INTENT_STATUSES].sort()).toEqual([...ALL].sort());
  });

  it('covers 36 pairs, 10 of them allowed', () => {
    expect(PAIRS).toHaveLength(36);
    expect(PAIRS.filter(([, , ok]) => ok)).toHaveLength(10);
  });

  it.each(PAIRS)('%s → %s allowed: %s', (from, to, ok) => {
    expect(canTransition(from, to)).toBe(ok);
    expect(allowedNextStatuses(from).includes(to)).toBe(ok);
  });

  it('no status may transition to itself', () => {
    for (const s of ALL) expect(canTransition(s, s)).toBe(false);
  });

  it('only COMPLETED is terminal', () => {
    expect(ALL.filter(isTerminal)).toEqual(['COMPLETED']);
  });

  it('a correction moves PROCESSED to CORRECTED, keeps the others, and is refused on COMPLETED and FAILED', () => {
    expect(statusAfterCorrection('RECEIVED')).toBe('RECEIVED');
    expect(statusAfterCorrection('NORMALIZED')).toBe('NORMALIZED');
    expect(statusAfterCorrection('PROCESSED')).toBe('CORRECTED');
    expect(statusAfterCorrection('CORRECTED')).toBe('CORRECTED');
    expect(statusAfterCorrection('COMPLETED')).toBeNull();
    expect(statusAfterCorrection('FAILED')).toBeNull();
  });

  it('labels a transition from→to', () => {
    expect(transitionLabel('PROCESSED', 'COMPLETED')).toBe('PROCESSED->COMPLETED');
  });
});
