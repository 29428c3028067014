import { connect } from 'node:net';
import pg from 'pg';
import type { Instance } from './api';

/**
 * The faults a chaos run injects, one at a time in turn, each a real failure of a real part:
 * - terminate: `pg_terminate_backend` on a console backend that is inside a transaction or a statement;
 * - restart: one console instance killed with SIGKILL (no graceful anything) and started again;
 * - hold: a row lock held by an outside session longer than the console's lock timeout;
 * - deadlock: an outside session and a console bulk update lock two intents in crossing order;
 * - pause: a client that sends half a request, stops, then sends the rest;
 * - worker: one worker process SIGKILLed with its claims and pipeline runs in flight, and started again (the other
 *   worker's rescuer takes the claims over once their leases run out; the relay in it dies too);
 * - nats: the NATS server stopped while the relays publish, and started again a little later;
 * - replica: the read replica's replay paused under load until the instances take it out of rotation (their reads,
 *   and every read that must see a command the replica has not replayed, go to the primary meanwhile), then resumed
 *   until they put it back.
 * Worker and nats are there when the run has workers and NATS; replica when it has a read replica.
 * Each returns a short description of what it did, or null when there was nothing to do it to.
 */
export type Fault = { kind: string; inject: () => Promise<string | null> };

export type FaultContext = {
  directUrl: string;
  instances: Instance[];
  token: string;
  lockTimeoutMs: number;
  hotIds: () => string[];
  restartInstance: (index: number) => Promise<void>;
  killInstance: (index: number) => void;
  /** Kills worker `index` (SIGKILL), starts it again, and says which process went (holding how many claims) and which came. */
  restartWorker?: (index: number) => Promise<{ killed: number; held: number; started: number }>;
  workerCount?: number;
  nats?: { stop: () => Promise<void>; start: () => Promise<void> };
  /** The read replica the instances read from, and the lag past which they take it out of rotation. */
  replica?: { url: string; maxLagMs: number };
};

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];

async function withClient<T>(url: string, name: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: name });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Polls until `check` holds: the barrier that waits for a backend to be where the fault needs it. */
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

const admin = (ctx: FaultContext, work: (c: pg.Client) => Promise<string | null>) => withClient(ctx.directUrl, 'bridge-chaos:faults', work);

export function standardFaults(ctx: FaultContext): Fault[] {
  const worker = workerFault(ctx);
  const natsOutage = natsFault(ctx);
  const replica = replicaFault(ctx);
  // The instance restart last: it takes longest, and every other kind should have had its turn by then.
  return [
    terminateFault(ctx),
    ...(replica ? [replica] : []),
    deadlockFault(ctx),
    ...(worker ? [worker] : []),
    ...(natsOutage ? [natsOutage] : []),
    holdFault(ctx),
    pauseFault(ctx),
    restartFault(ctx),
  ];
}

function terminateFault(ctx: FaultContext): Fault {
  return {
    kind: 'backend terminated mid-transaction',
    inject: () =>
      admin(ctx, async (c) => {
        // Wait briefly for a console backend that is doing something, so the kill lands mid-work.
        let victim: { pid: number; application_name: string; state: string } | undefined;
        await until(async () => {
          const { rows } = await c.query<{ pid: number; application_name: string; state: string }>(
            `SELECT pid, application_name, state FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND application_name LIKE 'bridge:%' AND application_name NOT LIKE 'bridge-chaos%'
               AND state IN ('active', 'idle in transaction')`,
          );
          victim = rows.length ? pick(rows) : undefined;
          return victim !== undefined;
        }, 2_000);
        if (!victim) return null;
        await c.query('SELECT pg_terminate_backend($1)', [victim.pid]);
        return `pid ${victim.pid} (${victim.application_name}, ${victim.state})`;
      }),
  };
}

function restartFault(ctx: FaultContext): Fault {
  // The watcher of the live probe (the second instance) first: its restart is the one the stream must resume from.
  let nextRestart = ctx.instances.length > 1 ? 1 : 0;
  return {
    kind: 'instance killed and restarted',
    inject: async () => {
      const index = nextRestart++ % ctx.instances.length;
      // Never the last one standing: an instance a failed restart left down comes back first.
      const down = ctx.instances.flatMap((x, i) => (i !== index && !x.up ? [i] : []));
      for (const i of down) await ctx.restartInstance(i);
      ctx.killInstance(index);
      const started = Date.now();
      await ctx.restartInstance(index);
      const revived = down.length ? ` (${down.map((i) => ctx.instances[i].name).join(', ')}, left down before, started first)` : '';
      return `${ctx.instances[index].name} SIGKILLed, back in ${Date.now() - started} ms${revived}`;
    },
  };
}

function holdFault(ctx: FaultContext): Fault {
  return {
    kind: 'row lock held past the lock timeout',
    inject: () =>
      withClient(ctx.directUrl, 'bridge-chaos:holder', async (c) => {
        const id = pick(ctx.hotIds());
        await c.query('BEGIN');
        await c.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [id]);
        // Held on purpose for longer than the console waits, so callers meet lock timeouts (and name this holder).
        await new Promise((r) => setTimeout(r, ctx.lockTimeoutMs * 2));
        await c.query('ROLLBACK');
        return `intent ${id} locked for ${ctx.lockTimeoutMs * 2} ms`;
      }),
  };
}

function deadlockFault(ctx: FaultContext): Fault {
  return {
    kind: 'crossing lock order (deadlock)',
    inject: () =>
      withClient(ctx.directUrl, 'bridge-chaos:crossing', async (c) => {
        const ids = [...new Set(ctx.hotIds())].sort();
        if (ids.length < 2) return null;
        const i = Math.floor(Math.random() * (ids.length - 1));
        const [first, second] = [ids[i], ids[i + 1]];
        const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        await c.query('BEGIN');
        // This session waits long before looking for deadlocks, so the console's backend is the one that finds it
        // (after its own short deadlock_timeout) and must recover by retrying.
        await c.query("SET LOCAL deadlock_timeout = '10s'");
        await c.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [second]);
        const bulk = fetch(`${pick(ctx.instances.filter((x) => x.up)).url}/api/intents/bulk-status`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ids: [first, second], status: 'FAILED' }),
        }).then(
          (r) => r.status,
          () => 'unreachable',
        );
        // The bulk update locks `first`, then queues behind us for `second`: now ask for `first`.
        const queued = await until(async () => {
          const { rows } = await c.query(`SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, [pid]);
          return rows.length > 0;
        }, 5_000);
        let outcome = 'the bulk update never queued behind the outside session';
        if (queued) {
          try {
            await c.query("SET LOCAL lock_timeout = '15s'");
            await c.query('SELECT 1 FROM intents WHERE id = $1 FOR UPDATE', [first]);
            outcome = 'the console backend was chosen as the deadlock victim';
          } catch (err) {
            outcome = `the outside session was chosen (${(err as { code?: string }).code})`;
          }
        }
        await c.query('ROLLBACK').catch(() => undefined);
        return `${first.slice(0, 8)} / ${second.slice(0, 8)}: ${outcome}; the bulk update answered ${await bulk}`;
      }),
  };
}

function pauseFault(ctx: FaultContext): Fault {
  return {
    kind: 'client paused mid-request',
    inject: async () => {
      const instance = pick(ctx.instances.filter((x) => x.up));
      const id = pick(ctx.hotIds());
      const url = new URL(instance.url);
      const body = JSON.stringify({ status: 'FAILED' });
      const head = [
        `POST /api/intents/${id}/status HTTP/1.1`,
        `Host: ${url.host}`,
        `Authorization: Bearer ${ctx.token}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
        '',
        '',
      ].join('\r\n');
      const status = await new Promise<string>((resolve) => {
        const socket = connect(Number(url.port), url.hostname);
        let answer = '';
        socket.setTimeout(30_000, () => socket.destroy());
        socket.on('data', (d) => (answer += d.toString()));
        socket.on('close', () => resolve(answer.split('\r\n')[0] || 'no answer'));
        socket.on('error', () => resolve('connection failed'));
        socket.write(head + body.slice(0, 10));
        // The pause is the fault itself: the server must neither hang others nor answer before the body is whole.
        setTimeout(() => socket.write(body.slice(10)), 1_500);
      });
      return `half a status change to ${instance.name}, 1.5 s pause, then the rest: ${status}`;
    },
  };
}

function workerFault(ctx: FaultContext): Fault | null {
  let nextWorker = 0;
  return ctx.restartWorker
    ? {
        kind: 'worker killed and restarted',
        inject: async () => {
          const index = nextWorker++ % (ctx.workerCount ?? 1);
          // Its claims stay `running` under its name until their leases run out and a rescuer takes them.
          const { killed, held, started } = await ctx.restartWorker!(index);
          return `worker ${index + 1} (pid ${killed}) SIGKILLed holding ${held} claim(s); pid ${started} started in its place`;
        },
      }
    : null;
}

function natsFault(ctx: FaultContext): Fault | null {
  const nats = ctx.nats;
  return nats
    ? {
        kind: 'NATS stopped and started',
        inject: async () => {
          await nats.stop();
          // Long enough for the relays to fail publishes and back off while new events pile up in the outbox.
          await new Promise((r) => setTimeout(r, 2_000));
          const backlog = await admin(ctx, async (c) => {
            const { rows } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NULL');
            return String(rows[0].n);
          });
          await nats.start();
          return `NATS down for 2000 ms; ${backlog} event(s) waiting in the outbox when it came back`;
        },
      }
    : null;
}

type ReplicaView = { name: string; inRotation: boolean; lagMs: number | null };

/** The replicas as an instance's /api/ready shows them; null when it does not answer (killed by another fault). */
async function replicasSeenBy(instance: Instance): Promise<ReplicaView[] | null> {
  try {
    const res = await fetch(`${instance.url}/api/ready`, { signal: AbortSignal.timeout(5_000) });
    return ((await res.json()) as { replicas?: ReplicaView[] }).replicas ?? null;
  } catch {
    return null;
  }
}

/** Polls the instances' /api/ready (every 100 ms: a monitor tick is 200) until `holds` is true of what `which` of them say. */
async function untilInstancesSee(ctx: FaultContext, which: 'any' | 'every', holds: (r: ReplicaView) => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const views = (await Promise.all(ctx.instances.filter((i) => i.up).map(replicasSeenBy))).filter((v): v is ReplicaView[] => v !== null);
    const says = views.map((v) => v.length > 0 && v.every(holds));
    if (says.length && (which === 'any' ? says.some(Boolean) : says.every(Boolean))) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

function replicaFault(ctx: FaultContext): Fault | null {
  const replica = ctx.replica;
  return replica
    ? {
        kind: 'replica replay paused and resumed',
        inject: () =>
          withClient(replica.url, 'bridge-chaos:replica', async (c) => {
            await c.query('SELECT pg_wal_replay_pause()');
            const paused = Date.now();
            let out: boolean;
            try {
              // The clients keep writing, so the paused replica falls behind until the instances' monitors see it past
              // the lag limit: until then it serves reads that need nothing newer than its state, and sends the
              // others to the primary.
              out = await untilInstancesSee(ctx, 'any', (r) => !r.inRotation, replica.maxLagMs * 10);
            } finally {
              await c.query('SELECT pg_wal_replay_resume()');
            }
            const resumed = Date.now();
            const back = await untilInstancesSee(ctx, 'every', (r) => r.inRotation, replica.maxLagMs * 10);
            return (
              `replay paused for ${resumed - paused} ms (${out ? 'taken out of rotation' : 'never taken out of rotation'}); ` +
              (back ? `back in rotation on every instance ${Date.now() - resumed} ms after the resume` : 'NOT back in rotation on every instance')
            );
          }),
      }
    : null;
}
