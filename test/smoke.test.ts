import { beforeEach, describe, expect, it } from 'vitest';
import { reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { getIntent } from '@/lib/intents/queries';
import { intentRow, makeIntent, resetDatabase, tester } from './helpers';

describe('engine smoke', () => {
  beforeEach(resetDatabase);

  it('moves an intent and corrects it', async () => {
    const intent = await makeIntent('PROCESSED');
    expect(intent.version).toBe(2);
    const res = await reevaluateIntent({ id: intent.id, diff: { amount: 12 }, source: 'svc', reason: 'fix' }, tester);
    expect(res).toMatchObject({ status: 'CORRECTED', version: 3, correctionCount: 1, alreadyApplied: false, retries: 0 });
    const again = await reevaluateIntent({ id: intent.id, diff: { amount: 12 }, source: 'svc', reason: 'fix' }, tester);
    expect(again.alreadyApplied).toBe(true);
    const done = await updateIntentStatus({ id: intent.id, status: 'COMPLETED' }, tester);
    expect(done.intent.version).toBe(4);
    expect((await intentRow(intent.id)).payload).toEqual({ order: 'A-1', amount: 12 });
    expect((await getIntent(intent.id)).corrections).toHaveLength(1);
  });

  it('50 concurrent corrections all succeed', async () => {
    const intent = await makeIntent('NORMALIZED');
    const t0 = Date.now();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => reevaluateIntent({ id: intent.id, diff: { [`k${i}`]: i }, source: 'svc', reason: `r${i}` }, tester)),
    );
    console.log('50 corrections took', Date.now() - t0, 'ms; max retries', Math.max(...results.map((r) => r.retries)));
    expect((await intentRow(intent.id)).version).toBe(51);
  });
});
