import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { maintainedStatusCounts } from '@/lib/counts/status-counts';
import { createIntent, updateIntentStatus } from '@/lib/intents/commands';
import { LiveHub, liveHub, type LiveBatch, stopLiveHub } from '@/lib/live/hub';
import { resetDatabase, tester } from '../helpers';
import { eventually } from '../wait';

/**
 * The live feed carries the status counts: the hub reads them once per round, for all of its subscribers, so open
 * pages do not each fetch them after every change.
 */
beforeAll(resetDatabase);
afterAll(async () => {
  vi.restoreAllMocks();
  await stopLiveHub();
});

function collector() {
  const batches: LiveBatch[] = [];
  return {
    fn: (b: LiveBatch) => {
      batches.push(b);
    },
    next: (match: (b: LiveBatch) => boolean): Promise<LiveBatch> => eventually('a matching batch', () => batches.find(match)),
  };
}

const about = (intentId: string, toStatus: string) => (b: LiveBatch) => b.kind === 'changes' && b.events.some((e) => e.intentId === intentId && e.toStatus === toStatus);

describe('counts in the live feed', () => {
  it('arrive with the changes, exact, read once per round however many pages listen', async () => {
    const hub = await liveHub();
    const reads = vi.spyOn(LiveHub.prototype as unknown as { readCounts: () => Promise<unknown> }, 'readCounts');
    const pages = Array.from({ length: 5 }, collector);
    const unsubscribe = pages.map((p) => hub.subscribe(p.fn));
    try {
      const intent = await createIntent({ payload: { live: 'counts' }, source: 'live-test' }, tester);
      await updateIntentStatus({ id: intent.id, status: 'FAILED' }, tester);
      const got = await Promise.all(pages.map((p) => p.next(about(intent.id, 'FAILED'))));
      const expected = await maintainedStatusCounts();
      for (const batch of got) {
        expect(batch.kind === 'changes' && batch.counts).toMatchObject({ exact: true, counts: expected, total: Object.values(expected).reduce((a, b) => a + b, 0) });
      }
      // Every page got the same object: one read for the round, not one per page.
      expect(new Set(got.map((b) => (b.kind === 'changes' ? b.counts : null))).size).toBe(1);
      const rounds = new Set(got).size;
      expect(reads.mock.calls.length).toBeLessThanOrEqual(rounds + 1);
    } finally {
      unsubscribe.forEach((u) => u());
    }
  });
});
