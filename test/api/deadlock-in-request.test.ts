import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { clearOutcomes, persistedOutcomes, resetEngine, session, waitForWaiters } from '../barriers';
import { makeIntent } from '../helpers';
import { api, signInApiCaller } from './route-client';
import { withSettings } from '../settings';

// No lock wait in this file may run out: the interleaving below is ordered by barriers, and a lock timeout firing
// while the test steps through it would end the bulk's wait for another reason than the deadlock under test.
withSettings({ LOCK_TIMEOUT_MS: '60000' });

beforeAll(async () => {
  await resetEngine();
  await signInApiCaller();
});
beforeEach(resetEngine);

describe('a deadlock inside a request', () => {
  it('a bulk update crossing a foreign transaction is chosen as victim, retried inside the request, and answered 200; the deadlock is recorded', async () => {
    const [x, y] = [await makeIntent('PROCESSED'), await makeIntent('PROCESSED')];
    const [first, second] = [x.id, y.id].sort(); // the bulk locks in id order
    await clearOutcomes();
    // Postgres looks for a deadlock once per lock wait, deadlock_timeout (100 ms in tests) after the wait begins. For
    // the bulk to be the one that finds the cycle, its wait for the foreign transaction must begin after the cycle
    // is closed. So `second` is share-locked by two transactions, a holder and then the foreign one: the bulk waits
    // for them one after the other, in that order. While it waits for the holder, the foreign transaction asks for
    // `first`, which the bulk holds; only then does the holder end, and the bulk's wait for the foreign transaction
    // begins with the cycle already there. The foreign transaction would look only after 10 s.
    const holder = await session('bridge-test:holder');
    const foreign = await session('bridge-test:foreign');
    let res: Awaited<ReturnType<typeof api.bulk>>;
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM intents WHERE id = $1 FOR SHARE', [second]);
      await foreign.query('BEGIN');
      await foreign.query(`SET LOCAL deadlock_timeout = '10s'`);
      await foreign.query('SELECT id FROM intents WHERE id = $1 FOR SHARE', [second]);
      const bulk = api.bulk({ ids: [first, second], status: 'FAILED' });
      await waitForWaiters(1, { application: `bridge:bulk_update_status:${first}` });
      expect(await waitingFor(holder.pid)).toBe(true); // the bulk holds `first` and waits for the holder
      const foreignGetsFirst = foreign.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [first]);
      await waitForWaiters(1, { pids: [foreign.pid] });
      await holder.query('COMMIT');
      await foreignGetsFirst; // granted once the bulk was rolled back
      // The bulk's retry now queues behind the foreign transaction, which commits without changing anything.
      await waitForWaiters(1, { application: `bridge:bulk_update_status:${first}` });
      await foreign.query('COMMIT');
      res = await bulk;
    } finally {
      // Whatever happened, neither transaction may outlive the test: they would block every later reset.
      await holder.query('ROLLBACK').catch(() => undefined);
      await foreign.query('ROLLBACK').catch(() => undefined);
    }
    expect(res.status).toBe(200);
    expect(res.body.intents.map((i: { status: string; version: number }) => [i.status, i.version])).toEqual([
      ['FAILED', 3],
      ['FAILED', 3],
    ]);
    const events = await db().$queryRaw<{ operation: string; intentIds: string[]; detail: string; attempt: number; retried: boolean }[]>`
      SELECT operation, intent_ids::text[] AS "intentIds", detail, attempt, retried FROM deadlock_events`;
    expect(events).toEqual([{ operation: 'bulk_update_status', intentIds: [first, second], detail: expect.stringMatching(/deadlock detected[\s\S]*Process \d+ waits for ShareLock on transaction \d+; blocked by process \d+/), attempt: 1, retried: true }]);
    expect(events[0].detail).toContain(`blocked by process ${foreign.pid}`);
    const counts = await persistedOutcomes();
    expect(counts).toMatchObject({ 'bulk_update_status/deadlock_detected': 1, 'bulk_update_status/deadlock_retried': 1 });
    expect(counts['bulk_update_status/deadlock_exhausted']).toBeUndefined();
  });
});

/** Whether the bulk's backend is queued on the transaction of `pid` (and not on anyone else's). */
async function waitingFor(pid: number): Promise<boolean> {
  const rows = await db().$queryRaw<{ blockers: number[] }[]>`
    SELECT pg_blocking_pids(a.pid) AS blockers FROM pg_stat_activity a
    WHERE a.datname = current_database() AND a.application_name LIKE 'bridge:bulk_update_status:%' AND a.wait_event_type = 'Lock'`;
  return rows.length === 1 && rows[0].blockers.length === 1 && rows[0].blockers[0] === pid;
}
