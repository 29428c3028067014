import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { db } from '@/lib/db/client';
import { bulkUpdateStatus } from '@/lib/intents/commands';
import { InvalidTransitionError, LockTimeoutError } from '@/lib/intents/errors';
import { NotFoundError, ValidationError } from '@/lib/shared/errors';
import type { IntentStatus } from '@/lib/shared/intent-states';
import { intentRow, makeIntent, rawClient, resetDatabase, tester, untyped } from '../helpers';
import { waitForWaiters } from '../barriers';
import { auditOf, expectCompleteHistory, snapshot } from '../integrity';

/** Bulk status updates: locked in id order (no deadlocks between them), all-or-nothing. */

const held: pg.Client[] = [];
beforeEach(resetDatabase);
afterEach(async () => {
  for (const c of held.splice(0)) await c.end().catch(() => undefined);
});

const deadlockCount = async () => Number((await db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM deadlock_events`)[0].n);
const pgDeadlocks = async () =>
  Number((await db().$queryRaw<{ n: bigint }[]>`SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()`)[0].n);

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe('sorted bulk updates', () => {
  it('10 concurrent bulk updates over the same 5 intents in shuffled orders, alternating FAILED/RECEIVED: no deadlock, no lock timeout, versions exact', async () => {
    const intents = await Promise.all(Array.from({ length: 5 }, () => makeIntent('RECEIVED')));
    const ids = intents.map((i) => i.id);
    const deadlocksBefore = await pgDeadlocks();
    const targets: IntentStatus[] = Array.from({ length: 10 }, (_, k) => (k % 2 ? 'RECEIVED' : 'FAILED'));
    const results = await Promise.all(targets.map((status, k) => bulkUpdateStatus({ ids: shuffled(ids, k + 1), status }, tester)));

    for (const [k, r] of results.entries()) {
      expect(r.intents).toHaveLength(5);
      expect(r.intents.map((i) => i.id)).toEqual([...ids].sort());
      for (const i of r.intents) expect(i.status).toBe(targets[k]);
    }
    // Each bulk either moved all five or found them all already there (they move together, under sorted locks).
    const applied = results.filter((r) => r.alreadyApplied.length === 0).length;
    expect(results.every((r) => r.alreadyApplied.length === 0 || r.alreadyApplied.length === 5)).toBe(true);
    for (const id of ids) {
      const row = await intentRow(id);
      expect(row.version).toBe(applied);
      await expectCompleteHistory(id);
    }
    expect(await deadlockCount()).toBe(0);
    expect(await pgDeadlocks()).toBe(deadlocksBefore);
  });

  // From one console a second bulk behind a held row is refused at once (docs/LOCKING.md, "Waiting on a held row"), so
  // the second comes from another instance: its own connection, running the engine's bulk statement in mode 'wait'.
  it('two bulks (two instances) naming the intents in opposite orders queue behind a held row without deadlocking', async () => {
    const intents = await Promise.all(Array.from({ length: 5 }, () => makeIntent('RECEIVED')));
    const ids = intents.map((i) => i.id).sort();
    const deadlocksBefore = await pgDeadlocks();
    const h = await rawClient('bridge-test:holder');
    held.push(h);
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [ids[2]]);
    // Unsorted, these would take ids[0..1] and ids[4..3] and then wait on each other once the middle row is free.
    const up = bulkUpdateStatus({ ids, status: 'NORMALIZED' }, tester);
    await waitForWaiters(1);
    const other = await rawClient('bridge-test:other-instance');
    held.push(other);
    const down = other.query<{ outcome: string }>(
      `SELECT outcome FROM bridge_bulk_update_status($1::uuid[], 'NORMALIZED', ARRAY['RECEIVED']::text[], 30000, 'other-instance', NULL, NULL, 'wait')`,
      [[...ids].reverse()],
    );
    await waitForWaiters(2);
    await h.query('COMMIT');
    const [first, second] = await Promise.all([up, down]);
    expect(first.alreadyApplied).toEqual([]);
    expect(second.rows.map((r) => r.outcome)).toEqual(ids.map(() => 'already_applied'));
    expect(await pgDeadlocks()).toBe(deadlocksBefore);
    for (const id of ids) expect(await intentRow(id)).toMatchObject({ status: 'NORMALIZED', version: 1 });
  });

  it('writes one bulk_status_change audit event per changed intent, none for those already there', async () => {
    const [x, y] = await Promise.all([makeIntent('RECEIVED'), makeIntent('NORMALIZED')]);
    const res = await bulkUpdateStatus({ ids: [x.id, y.id], status: 'NORMALIZED' }, tester);
    expect(res.alreadyApplied).toEqual([y.id]);
    expect((await auditOf(x.id)).at(-1)).toMatchObject({ action: 'bulk_status_change', fromStatus: 'RECEIVED', toStatus: 'NORMALIZED', versionAfter: 1 });
    expect(await auditOf(y.id)).toHaveLength(2);
  });

  it('duplicate ids in one request count once', async () => {
    const x = await makeIntent('RECEIVED');
    const res = await bulkUpdateStatus({ ids: [x.id, x.id, x.id.toUpperCase()], status: 'FAILED' }, tester);
    expect(res.intents).toHaveLength(1);
    expect(await intentRow(x.id)).toMatchObject({ status: 'FAILED', version: 1 });
  });
});

describe('all-or-nothing', () => {
  it('one intent that cannot move refuses the whole bulk (409 naming it), nothing changes but the refusal’s record', async () => {
    const ok = await Promise.all([makeIntent('PROCESSED'), makeIntent('CORRECTED'), makeIntent('PROCESSED')]);
    const done = await makeIntent('COMPLETED');
    const before = await snapshot();
    const err = await bulkUpdateStatus({ ids: [...ok.map((i) => i.id), done.id], status: 'FAILED' }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidTransitionError);
    expect(err).toMatchObject({ httpStatus: 409, code: 'invalid_transition', details: { to: 'FAILED', intents: [{ intentId: done.id, from: 'COMPLETED', allowed: [] }] } });
    // The refusal is audited on the intent that stopped it (test/audit/refused-status.test.ts says how); nothing else moves.
    expect(await snapshot()).toEqual({ ...before, counts: { ...before.counts, audit_events: before.counts.audit_events + 1 } });
    expect((await auditOf(done.id)).at(-1)).toMatchObject({ action: 'status_change_refused' });
  });

  it('unknown ids: 404 naming exactly the missing ones, nothing changes', async () => {
    const x = await makeIntent('RECEIVED');
    const missing = ['00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001'];
    const before = await snapshot();
    const err = await bulkUpdateStatus({ ids: [x.id, ...missing], status: 'NORMALIZED' }, tester).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ httpStatus: 404, details: { missing: [...missing].sort() } });
    expect(await snapshot()).toEqual(before);
  });

  it('a held row past the lock timeout: 423 lock_timeout, nothing changes on the other intents either', async () => {
    const intents = await Promise.all(Array.from({ length: 3 }, () => makeIntent('RECEIVED')));
    const ids = intents.map((i) => i.id).sort();
    const h = await rawClient('bridge-test:holder');
    held.push(h);
    await h.query('BEGIN');
    await h.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [ids[2]]);
    const before = await snapshot();
    const err = await bulkUpdateStatus({ ids, status: 'NORMALIZED' }, tester, { lockTimeoutMs: 100 }).catch((e: unknown) => e);
    await h.query('ROLLBACK');
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect(err).toMatchObject({ httpStatus: 423, details: { intentIds: ids, nowait: false, lockTimeoutMs: 100 } });
    // It names the one intent that was held, not all three.
    expect((err as Error).message).toMatch(new RegExp(`^Waited 100 ms for the lock on intent ${ids[2]} \\(1 of the 3\\) without getting it\\. It is held by backend \\d+ \\(bridge-test:holder`));
    expect(await snapshot()).toEqual(before);
  });

  it('bad input names the field: empty ids, a non-uuid id, an unknown status', async () => {
    const x = await makeIntent('RECEIVED');
    for (const [input, field] of [
      [{ ids: [], status: 'FAILED' }, 'ids'],
      [{ ids: [x.id, 'nope'], status: 'FAILED' }, 'ids.1'],
      [{ ids: [x.id], status: 'GONE' }, 'status'],
      [{ ids: x.id, status: 'FAILED' }, 'ids'],
    ] as const) {
      const err = await bulkUpdateStatus(untyped(input), tester).catch((e: unknown) => e);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues.map((i) => i.field)).toContain(field);
    }
    expect(await intentRow(x.id)).toMatchObject({ status: 'RECEIVED', version: 0 });
  });
});
