import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { CHANGES_CHANNEL } from '@/lib/live/announce';
import { rawClient, resetDatabase } from '../helpers';
import { BACKENDS, flushRedis } from './backends';

/**
 * A lease event that goes out to other services wakes the relays (and the live hubs) when it commits, as the
 * engine's writes do, rather than waiting for their next poll. Refreshes are not published, so they wake no one.
 */
describe.each(BACKENDS)('lease events announce their commits ($name)', ({ make, skip }) => {
  let listener: pg.Client;
  let heard = 0;
  let wake: (() => void) | undefined;
  const nextNotification = () => new Promise<void>((resolve) => (wake = resolve));

  beforeEach(async ({ skip: skipTest }) => {
    if (skip) skipTest('no Redis in this run (see the warning at the start of the run)');
    await resetDatabase();
    await flushRedis();
    listener = await rawClient('bridge-test:listener');
    await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
    heard = 0;
    listener.on('notification', () => {
      heard++;
      wake?.();
    });
  });
  afterEach(async () => {
    await listener?.end();
  });

  it('acquired, denied and released each wake the listeners', async () => {
    const leases = make();
    let next = nextNotification();
    const grant = await leases.acquire('announce:r', 'alice', 60_000);
    if (!grant.acquired) throw new Error('not acquired');
    await next;
    next = nextNotification();
    expect((await leases.acquire('announce:r', 'bob', 60_000)).acquired).toBe(false);
    await next;
    next = nextNotification();
    expect(await leases.release('announce:r', 'alice', grant.token)).toEqual({ released: true });
    await next;
    expect(heard).toBeGreaterThanOrEqual(3);
  });
});
