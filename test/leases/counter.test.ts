import { beforeEach, describe, expect, it } from 'vitest';
import { reevaluateIntent } from '@/lib/intents/commands';
import { FencingTokenStaleError } from '@/lib/leases/errors';
import { leaseHistory } from '@/lib/leases/events';
import { intentRow, makeIntent, resetDatabase } from '../helpers';
import { BACKENDS, flushRedis, grantsFrom, overlaps } from './backends';

/**
 * A lock-set workload in the style of Jepsen's: N clients increment one counter, each under the lease — acquire,
 * read, pause, write read + 1, release — where some pauses are longer than the TTL, so leases run out under their
 * holders while they are "working". Every write carries its fencing token. Whatever interleaving happens, the
 * counter must equal the number of increments that were acknowledged: none lost, none invented.
 */
const CLIENTS = 5;
const OPS_PER_CLIENT = 6;
const TTL_MS = 120;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(BACKENDS)('counter under the lease with pauses past the TTL ($name)', ({ make, skip }) => {
  beforeEach(async ({ skip: skipTest }) => {
    if (skip) skipTest('no Redis in this run (see the warning at the start of the run)');
    await resetDatabase();
    await flushRedis();
  });

  it('with fencing no acknowledged increment is lost', async () => {
    const leases = make();
    const resource = `counter:${leases.name}`;
    const intent = await makeIntent('PROCESSED', { counter: 0 });
    let acknowledged = 0;
    let refused = 0;
    // Deterministic variety: every third operation of a client pauses for two TTLs, the others briefly.
    const client = async (n: number) => {
      for (let op = 0; op < OPS_PER_CLIENT; op++) {
        let grant = await leases.acquire(resource, `client-${n}`, TTL_MS);
        while (!grant.acquired) {
          await pause(5 + Math.random() * 10);
          grant = await leases.acquire(resource, `client-${n}`, TTL_MS);
        }
        const read = Number(((await intentRow(intent.id)).payload as { counter: number }).counter);
        await pause((n + op) % 3 === 0 ? 2 * TTL_MS : Math.random() * TTL_MS * 0.3);
        try {
          await reevaluateIntent(
            { id: intent.id, diff: { counter: read + 1, op: `${n}-${op}` }, source: 'jepsen', reason: 'increment', fencing: { resource, token: grant.token } },
            { name: `client-${n}` },
          );
          acknowledged++;
        } catch (err) {
          if (!(err instanceof FencingTokenStaleError)) throw err;
          refused++;
        }
        await leases.release(resource, `client-${n}`, grant.token);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));

    const counter = Number(((await intentRow(intent.id)).payload as { counter: number }).counter);
    expect(acknowledged + refused).toBe(CLIENTS * OPS_PER_CLIENT);
    expect(counter).toBe(acknowledged);
    // The long pauses hand the lease to a spinning client while its holder still "works": a run where the fence
    // refused nothing would not have tested it.
    expect(refused).toBeGreaterThan(0);
    // The lease itself never had two holders at once (its grants, from the event log, do not overlap).
    expect(overlaps(grantsFrom(await leaseHistory(resource)))).toEqual([]);
    console.info(`[counter ${leases.name}] ${acknowledged} increments acknowledged, ${refused} refused by the fence, counter ${counter}`);
  });
});
