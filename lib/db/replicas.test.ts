import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReadReplicas, replicaHost, replicaUrls } from './replicas';

/**
 * The monitor's arithmetic, with the primary's position and the replica's replay position given by the test and the
 * clock set by it: lag in bytes and in time, leaving and rejoining the rotation, choosing by position. No database
 * (the pools are never used: each replica's look is replaced).
 */
function monitor(maxLagMs = 1000) {
  let primary = 100n;
  let replayed = 100n;
  const set = new ReadReplicas(['postgresql://u:secret@replica-1:5433/bridge'], { maxLagMs, pollMs: 100 }, async () => primary);
  const [replica] = set.replicas;
  replica.lookReplayed = async () => (replica.replay = replayed);
  return {
    set,
    replica,
    primaryAt: (lsn: bigint) => (primary = lsn),
    replayedTo: (lsn: bigint) => (replayed = lsn),
  };
}

afterEach(() => vi.useRealTimers());

describe('the replica monitor', () => {
  it('names a replica by its place in the list, and shows its host, port and database, never its password', () => {
    expect(monitor().set.status()[0]).toMatchObject({ name: 'replica-1', host: 'replica-1:5433/bridge' });
    expect(replicaHost('postgresql://u:secret@db-2/bridge')).toBe('db-2:5432/bridge');
    expect(replicaUrls(' postgresql://a/x , ,postgresql://b/y')).toEqual(['postgresql://a/x', 'postgresql://b/y']);
  });

  it('measures the lag from when the primary first passed what the replica has replayed, and takes it out of rotation past the limit', async () => {
    vi.useFakeTimers({ now: 0 });
    const m = monitor(1000);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: true, lagBytes: 0, lagMs: 0 });

    vi.setSystemTime(500);
    m.primaryAt(300n);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: true, lagBytes: 200, lagMs: 0 });

    vi.setSystemTime(1200);
    m.primaryAt(400n);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: true, lagBytes: 300, lagMs: 700 });

    vi.setSystemTime(1600);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: false, lagMs: 1100 });
    expect(m.replica.problem).toContain('READ_REPLICA_MAX_LAG_MS=1000');

    m.replayedTo(300n);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: true, lagBytes: 100, lagMs: 400 });
    m.replayedTo(400n);
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: true, lagBytes: 0, lagMs: 0 });
  });

  it('chooses a replica only once it has replayed the reader’s position, asking it again when the last look is behind', async () => {
    const m = monitor();
    await m.set.start();
    expect(await m.set.choose(100n)).toBe(m.replica);
    expect(await m.set.choose(150n)).toBeNull();
    m.replayedTo(150n);
    expect(await m.set.choose(150n)).toBe(m.replica);
    await m.set.close();
  });

  it('takes a replica that does not answer out of rotation', async () => {
    const m = monitor();
    m.replica.lookReplayed = async () => {
      throw new Error('connection refused');
    };
    await m.set.poll();
    expect(m.replica.status()).toMatchObject({ inRotation: false, lagMs: null, lagBytes: null });
    expect(m.replica.problem).toContain('connection refused');
    expect(await m.set.choose(0n)).toBeNull();
    await m.set.close();
  });
});
