import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '@/lib/shared/errors';
import { rowLockHolders } from '@/lib/locks/holders';
import { takeLocksSnapshot } from '@/lib/locks/queries';
import { makeIntent, rawClient, resetDatabase } from '../helpers';
import { waitForWaiters } from '../barriers';

/**
 * What on-call needs in an incident, against real sessions: the client address, user, wait event and how long a
 * session has been in its state; every session on request; a table's index locks folded into its row; and which
 * backend holds an intent's row, whoever it is.
 */
const clients: pg.Client[] = [];
const pending: Promise<unknown>[] = [];

async function client(name: string): Promise<pg.Client & { pid: number }> {
  const c = await rawClient(name);
  c.on('error', () => undefined);
  clients.push(c);
  const [{ pid }] = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  return Object.assign(c, { pid });
}

beforeEach(async () => {
  await resetDatabase();
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
  await Promise.all(pending.splice(0));
});

describe('Locks for incidents', () => {
  it('shows user, state duration and wait event, and lists idle sessions only when every session is asked for', async () => {
    const intent = await makeIntent();
    const holder = await client('incident holder');
    const waiter = await client('incident waiter');
    const idle = await client('incident idle');
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]);
    pending.push(waiter.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [intent.id]).catch((e) => e));
    await waitForWaiters(1);

    const snap = await takeLocksSnapshot({});
    expect(snap.allSessions).toBe(false);
    const h = snap.backends.find((b) => b.pid === holder.pid)!;
    expect(h).toMatchObject({ state: 'idle in transaction', user: expect.any(String) });
    expect(h.stateChange).not.toBeNull();
    const w = snap.backends.find((b) => b.pid === waiter.pid)!;
    expect(w).toMatchObject({ waitEventType: 'Lock', waitEvent: expect.stringMatching(/transactionid|tuple/) });
    expect(snap.backends.some((b) => b.pid === idle.pid)).toBe(false);

    const all = await takeLocksSnapshot({ all: 'true' });
    expect(all.allSessions).toBe(true);
    expect(all.backends.find((b) => b.pid === idle.pid)).toMatchObject({ state: 'idle', applicationName: 'incident idle' });
    await expect(takeLocksSnapshot({ all: 'maybe' })).rejects.toBeInstanceOf(ValidationError);
    await holder.query('ROLLBACK');
  });

  it('folds a table’s index locks into the table’s row', async () => {
    const intent = await makeIntent();
    const writer = await client('incident writer');
    await writer.query('BEGIN');
    await writer.query(`UPDATE intents SET source = 'folded' WHERE id = $1`, [intent.id]);
    const snap = await takeLocksSnapshot({ limit: 1000 });
    const mine = snap.locks.filter((l) => l.pid === writer.pid && l.lockType === 'relation');
    const table = mine.find((l) => l.relation === 'intents' && l.mode === 'RowExclusiveLock');
    expect(table?.indexes).toEqual(expect.arrayContaining(['intents_pkey']));
    // No separate row is left for an index of intents in that mode.
    expect(mine.filter((l) => l.relation?.startsWith('intents_') && l.mode === 'RowExclusiveLock')).toEqual([]);
    await writer.query('ROLLBACK');
  });

  it('names the backend holding an intent’s row (a plain session or an update in flight), and nobody once it ends', async () => {
    const [locked, updated, free] = await Promise.all([makeIntent(), makeIntent(), makeIntent()]);
    const a = await client('psql (a person)');
    const b = await client('psql (an update)');
    await a.query('BEGIN');
    await a.query('SELECT id FROM intents WHERE id = $1 FOR UPDATE', [locked.id]);
    await b.query('BEGIN');
    await b.query(`UPDATE intents SET source = 'x' WHERE id = $1`, [updated.id]);

    const holders = await rowLockHolders({ ids: [locked.id, updated.id, free.id].join(',') });
    expect(holders.map((h) => [h.intentId, h.pid]).sort()).toEqual([[locked.id, a.pid], [updated.id, b.pid]].sort());
    expect(holders.find((h) => h.pid === a.pid)).toMatchObject({ applicationName: 'psql (a person)', state: 'idle in transaction' });

    await a.query('ROLLBACK');
    await b.query('COMMIT');
    expect(await rowLockHolders({ ids: [locked.id, updated.id].join(',') })).toEqual([]);
    await expect(rowLockHolders({ ids: 'nope' })).rejects.toBeInstanceOf(ValidationError);
  });
});
