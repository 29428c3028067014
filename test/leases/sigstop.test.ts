import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { reevaluateIntent } from '@/lib/intents/commands';
import { intentRow, makeIntent, resetDatabase } from '../helpers';
import { BACKENDS, flushRedis, redisUrl } from './backends';
import { eventually } from '../wait';

/**
 * Kleppmann's scenario, for real: a lease holder in another process is paused with SIGSTOP past its TTL, someone
 * else takes the lease and writes, then the paused holder continues and writes what it computed before the pause.
 * With fencing its write is refused; without (the control) it overwrites the other's increment, and the test shows
 * the lost update — proof that the first half can fail.
 */
const WRITER = fileURLToPath(new URL('./fenced-writer.ts', import.meta.url));
const TTL_MS = 300;

type Message = { acquired?: number; read?: number; written?: number; refused?: string; crashed?: string };

function startWriter(resource: string, intentId: string, fencing: boolean, backend: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, resource, intentId, String(TTL_MS), fencing ? 'on' : 'off', backend, redisUrl], {
    env: { ...process.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  }) as ChildProcessWithoutNullStreams;
  const messages: Message[] = [];
  const waiters: (() => void)[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      messages.push(JSON.parse(line) as Message);
    } catch {
      return;
    }
    waiters.splice(0).forEach((w) => w());
  });
  const next = (pick: (m: Message) => boolean) =>
    eventually('the writer’s next message', async () => messages.find(pick) ?? (child.exitCode !== null && !messages.some(pick) ? Promise.reject(new Error(`writer exited: ${stderr}`)) : undefined));
  return { child, next };
}

async function run(backendName: string, make: () => import('@/lib/leases/types').LeaseBackend, fencing: boolean) {
  const leases = make();
  const resource = `sigstop:${backendName}:${fencing ? 'fenced' : 'control'}`;
  const intent = await makeIntent('PROCESSED', { counter: 0 });
  const writer = startWriter(resource, intent.id, fencing, backendName);
  try {
    const first = await writer.next((m) => m.acquired !== undefined);
    expect(first.read).toBe(0);

    // The holder stops mid-flight: no refreshes, no writes, its lease runs out.
    writer.child.kill('SIGSTOP');
    const second = await eventually('the stopped holder’s lease to run out', async () => {
      const r = await leases.acquire(resource, 'second-writer', 60_000);
      return r.acquired ? r : undefined;
    });
    expect(second.token).toBeGreaterThan(first.acquired!);
    const read = Number(((await intentRow(intent.id)).payload as { counter: number }).counter);
    await reevaluateIntent(
      { id: intent.id, diff: { counter: read + 1, lastWriter: `second-writer#${second.token}` }, source: 'sigstop-test', reason: 'increment under the lease', ...(fencing ? { fencing: { resource, token: second.token } } : {}) },
      { name: 'second-writer' },
    );
    await leases.release(resource, 'second-writer', second.token);

    // The paused holder wakes up and writes what it computed before the pause.
    writer.child.kill('SIGCONT');
    writer.child.stdin.write('write\n');
    const outcome = await writer.next((m) => m.written !== undefined || m.refused !== undefined || m.crashed !== undefined);
    const acknowledged = 1 + (outcome.written !== undefined ? 1 : 0);
    const counter = Number(((await intentRow(intent.id)).payload as { counter: number }).counter);
    return { outcome, acknowledged, counter };
  } finally {
    if (writer.child.exitCode === null) {
      writer.child.kill('SIGCONT');
      writer.child.kill('SIGKILL');
    }
  }
}

describe.each(BACKENDS)('a holder paused past its TTL ($name)', ({ name, make, skip }) => {
  beforeEach(async ({ skip: skipTest }) => {
    if (skip) skipTest('no Redis in this run (see the warning at the start of the run)');
    await resetDatabase();
    await flushRedis();
  });

  it('with fencing: its late write is refused with fencing_token_stale, and no increment is lost', async () => {
    const { outcome, acknowledged, counter } = await run(name, make, true);
    expect(outcome).toEqual({ refused: 'fencing_token_stale' });
    expect(counter).toBe(acknowledged);
  });

  it('control, fencing off: the late write goes through and an acknowledged increment is lost', async () => {
    const { outcome, acknowledged, counter } = await run(name, make, false);
    expect(outcome.written).toBeDefined();
    // Two writers were told "done", the counter went up by one: the lease alone did not protect the write.
    expect(acknowledged).toBe(2);
    expect(counter).toBe(1);
  });
});
