import { describe, expect, it } from 'vitest';
import { ValidationError } from '@/lib/shared/errors';
import { DEFAULT_TARGETS, resolveTargets } from './targets';

describe('replay targets', () => {
  it('defaults to the documented target numbers', () => {
    expect(DEFAULT_TARGETS).toMatchObject({
      throughputMinPerSec: 2000,
      baselineMinRatio: 0.8,
      lockAcquisitionP95MaxMs: 5,
      corrections50P95MaxMs: 150,
      deadlockRecoveryMeanMaxMs: 300,
    });
  });

  it('applies REPLAY_TARGETS, then explicit overrides', () => {
    const t = resolveTargets('{"throughputMinPerSec": 1000, "lockAcquisitionP95MaxMs": 10}', { lockAcquisitionP95MaxMs: 8 });
    expect(t.throughputMinPerSec).toBe(1000);
    expect(t.lockAcquisitionP95MaxMs).toBe(8);
    expect(t.baselineMinRatio).toBe(0.8);
  });

  it('refuses what it cannot use, naming the field', () => {
    expect(() => resolveTargets('not json')).toThrow(ValidationError);
    expect(() => resolveTargets(undefined, { throughputMinPerSec: -1 })).toThrow(/targets\.throughputMinPerSec/);
    expect(() => resolveTargets(undefined, { throughputMinPerSecond: 5 })).toThrow(ValidationError);
    expect(() => resolveTargets('[1]')).toThrow(/REPLAY_TARGETS/);
  });
});
