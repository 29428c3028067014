import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus, reevaluateIntent, updateIntentStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError, VersionConflictError } from '@/lib/intents/errors';
import { DatabaseUnderPressureError } from '@/lib/shared/errors';
import { getIntent, getIntentAudit } from '@/lib/intents/queries';
import { makeIntent, resetDatabase, tester } from '../helpers';
import { expectCompleteHistory } from '../integrity';

/**
 * History integrity under a mixed concurrent load: version equals the number of committed changes, one audit event
 * per committed change, corrections without gaps or duplicates, and every success the engine reported is in it.
 */
beforeEach(resetDatabase);

describe('history integrity', () => {
  it('a mixed concurrent load over 3 intents: every reported change is in the history and nothing else is', async () => {
    const intents = await Promise.all(Array.from({ length: 3 }, (_, i) => makeIntent('NORMALIZED', { n: i })));
    const ids = intents.map((i) => i.id);
    const applied = new Map(ids.map((id) => [id, 0]));
    const credit = (id: string, n = 1) => applied.set(id, applied.get(id)! + n);
    // Corrections that succeeded (applied or already applied), by intent: their fields must be in the payload.
    const corrected = new Map(ids.map((id) => [id, new Set<string>()]));
    let conflicts = 0;
    let refusals = 0;
    // Status changes the state machine refused (the intent had moved past PROCESSED): audited, no version.
    const refusedMoves = new Map(ids.map((id) => [id, 0]));
    // A burst on one row from one process: past the bound on waiters, commands are refused at once and change
    // nothing (docs/LOCKING.md, "Waiting on a held row"). Those are the only failures besides the expected ones.
    const refused = (e: unknown) => {
      const bound = (e instanceof LockTimeoutError && (e.details as { refusedWithoutWaiting?: boolean }).refusedWithoutWaiting === true) || e instanceof DatabaseUnderPressureError;
      expect(bound, String(e)).toBe(true);
      refusals += 1;
    };

    const work: Promise<void>[] = [];
    for (const id of ids) {
      for (let k = 0; k < 15; k++) {
        const strategy = k % 3 === 0 ? 'pessimistic' : 'optimistic';
        work.push(
          reevaluateIntent({ id, diff: { [`f${k}`]: k }, source: 'load', reason: `c${k}` }, tester, { strategy }).then((r) => {
            corrected.get(id)!.add(`f${k}`);
            if (!r.alreadyApplied) credit(id);
          }, refused),
        );
      }
      for (let k = 0; k < 5; k++) {
        work.push(
          reevaluateIntent({ id, diff: { same: true }, source: 'load', reason: 'dup' }, tester).then((r) => {
            corrected.get(id)!.add('same');
            if (!r.alreadyApplied) credit(id);
          }, refused),
        );
      }
      for (let k = 0; k < 3; k++) {
        work.push(
          updateIntentStatus({ id, status: 'PROCESSED' }, tester).then(
            (r) => void (r.alreadyApplied || credit(id)),
            (e: unknown) => (e instanceof InvalidTransitionError ? void refusedMoves.set(id, refusedMoves.get(id)! + 1) : refused(e)),
          ),
        );
      }
      work.push(
        reevaluateIntent({ id, diff: { late: 1 }, source: 'ui', reason: 'stale', expectedVersion: 0 }, tester).then(
          () => expect.fail('a stale expectedVersion must not apply'),
          (e: unknown) => {
            if (e instanceof VersionConflictError) conflicts += 1;
            else refused(e);
          },
        ),
      );
    }
    for (let k = 0; k < 2; k++) {
      work.push(
        bulkUpdateStatus({ ids: [...ids].reverse(), status: 'PROCESSED' }, tester).then(
          (r) => r.intents.forEach((i) => void (r.alreadyApplied.includes(i.id) || credit(i.id))),
          // Refused whole: each intent that could not move has the refusal on record.
          (e: unknown) =>
            e instanceof InvalidTransitionError
              ? (e.details as { intents: { intentId: string }[] }).intents.forEach(({ intentId }) => void refusedMoves.set(intentId, refusedMoves.get(intentId)! + 1))
              : refused(e),
        ),
      );
    }
    await Promise.all(work);
    console.log(`[measure] mixed burst: ${refusals} command(s) refused by the bound on waiters, ${conflicts} stale version(s)`);

    for (const [index, id] of ids.entries()) {
      const history = await expectCompleteHistory(id);
      expect(history.version - intents[index].version, `intent ${index}`).toBe(applied.get(id));
      expect(history.corrections).toBe(corrected.get(id)!.size);
      const detail = await getIntent(id);
      expect(detail.version).toBe(history.version);
      expect(detail.corrections.map((c) => c.versionAfter)).toEqual([...detail.corrections.map((c) => c.versionAfter)].sort((a, b) => a - b));
      const audit = await getIntentAudit(id);
      expect(audit).toHaveLength(history.version + 1 + refusedMoves.get(id)!);
      expect(audit.filter((e) => e.action === 'status_change_refused')).toHaveLength(refusedMoves.get(id)!);
      expect(audit.map((e) => Number(e.id))).toEqual([...audit.map((e) => Number(e.id))].sort((a, b) => a - b));
      // A refused correction left nothing behind; a successful one is in the payload.
      for (let k = 0; k < 15; k++) expect(detail.payload[`f${k}`]).toBe(corrected.get(id)!.has(`f${k}`) ? k : undefined);
      expect(detail.payload.late).toBeUndefined();
    }
    const [{ n }] = await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM conflict_events`;
    expect(Number(n)).toBe(conflicts);
  });

  it('the audit log is append-only: updates and deletes are refused by the database', async () => {
    const intent = await makeIntent('NORMALIZED');
    await expect(db().$executeRaw`UPDATE audit_events SET actor = 'someone else' WHERE intent_id = ${intent.id}::uuid`).rejects.toThrow(/append-only/);
    await expect(db().$executeRaw`DELETE FROM audit_events WHERE intent_id = ${intent.id}::uuid`).rejects.toThrow(/append-only/);
    expect(await getIntentAudit(intent.id)).toHaveLength(2);
  });

  it('the history check itself catches a version moved without an audit event', async () => {
    // Guards the guard: a change written behind the engine's back must fail expectCompleteHistory.
    const intent = await makeIntent('NORMALIZED');
    await db().$executeRaw`UPDATE intents SET version = version + 1 WHERE id = ${intent.id}::uuid`;
    await expect(expectCompleteHistory(intent.id)).rejects.toThrow();
  });

  it('the history check catches a correction row without its audit event', async () => {
    const intent = await makeIntent('NORMALIZED');
    await db().$executeRaw`
      INSERT INTO corrections (intent_id, correction_id, diff, source, reason, actor, version_before, version_after, status_before, status_after)
      VALUES (${intent.id}::uuid, 'x', '{}'::jsonb, 's', 'r', 'a', 1, 2, 'NORMALIZED', 'NORMALIZED')`;
    await expect(expectCompleteHistory(intent.id)).rejects.toThrow();
  });
});
