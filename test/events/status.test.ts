import { beforeEach, describe, expect, it } from 'vitest';
import { db } from '@/lib/db/client';
import { BACKLOG_COUNT_CAP, outboxStatus } from '@/lib/events/status';
import { makeIntent, resetDatabase } from '../helpers';

/**
 * The Events page's read of the outbox: bounded whatever the backlog (a console without a relay keeps every event),
 * and shared by the viewers polling it at the same moment.
 */
beforeEach(resetDatabase);

/** Copies the outbox's rows until `total` wait unpublished, oldest first as written. */
async function backlogOf(total: number) {
  await makeIntent('RECEIVED');
  await db().$executeRaw`
    INSERT INTO outbox_events (subject, ordering_key, partition, payload, created_at)
    SELECT o.subject, o.ordering_key || ':' || n, bridge_outbox_partition(o.ordering_key || ':' || n), o.payload, o.created_at + n * interval '1 millisecond'
    FROM (SELECT * FROM outbox_events ORDER BY id LIMIT 1) o, generate_series(1, ${total}::int - (SELECT count(*)::int FROM outbox_events)) n`;
}

describe('the outbox status', () => {
  it('counts the backlog exactly up to the cap, and says "at least" past it', async () => {
    await backlogOf(25);
    expect(await outboxStatus()).toMatchObject({ backlog: 25, backlogCapped: false });
    await backlogOf(BACKLOG_COUNT_CAP + 50);
    const status = await outboxStatus();
    expect(status).toMatchObject({ backlog: BACKLOG_COUNT_CAP, backlogCapped: true });
    // The oldest waiting event is still the oldest of them all, found without counting them.
    const [oldest] = await db().$queryRaw<{ at: Date }[]>`SELECT min(created_at) AS at FROM outbox_events WHERE published_at IS NULL`;
    expect(status.oldestUnpublishedAt).toBe(oldest.at.toISOString());
    expect(status.lagMs).toBeGreaterThan(0);
    // Published rows leave the backlog.
    await db().$executeRaw`UPDATE outbox_events SET published_at = now() WHERE id IN (SELECT id FROM outbox_events ORDER BY id LIMIT 100)`;
    expect(await outboxStatus()).toMatchObject({ backlog: BACKLOG_COUNT_CAP - 50, backlogCapped: false, publishedLastMinute: 100 });
  });

  it('is read once for the viewers asking at the same moment', async () => {
    await backlogOf(10);
    const answers = await Promise.all(Array.from({ length: 20 }, () => outboxStatus()));
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toMatchObject({ backlog: 10, backlogCapped: false });
    // A later question is a new read.
    await db().$executeRaw`UPDATE outbox_events SET published_at = now()`;
    expect(await outboxStatus()).toMatchObject({ backlog: 0, lagMs: 0, oldestUnpublishedAt: null });
  });
});
