import { describe, expect, it } from 'vitest';
import { normaliseReason, reasonProblem, REASON_MAX } from './reasons';

describe('status-change reasons', () => {
  it('requires one for FAILED only', () => {
    expect(reasonProblem('FAILED', '')).toMatch(/is required when marking intents FAILED/);
    expect(reasonProblem('FAILED', '   ')).toMatch(/is required/);
    expect(reasonProblem('FAILED', undefined)).toMatch(/is required/);
    expect(reasonProblem('FAILED', 'card declined')).toBeNull();
    expect(reasonProblem('NORMALIZED', undefined)).toBeNull();
    expect(reasonProblem('COMPLETED', '')).toBeNull();
  });

  it('refuses non-text and over-long reasons', () => {
    expect(reasonProblem('NORMALIZED', 42)).toBe('must be text');
    expect(reasonProblem('NORMALIZED', 'x'.repeat(REASON_MAX + 1))).toMatch(/at most/);
  });

  it('passes on a trimmed reason, or none', () => {
    expect(normaliseReason('  why  ')).toBe('why');
    expect(normaliseReason('  ')).toBeUndefined();
    expect(normaliseReason(3)).toBeUndefined();
  });
});
