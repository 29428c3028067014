import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { livePositionForPage } from '@/lib/console/live-position';
import { createIntent } from '@/lib/intents/commands';
import { liveHub, runningHubPosition, stopLiveHub } from '@/lib/live/hub';
import { changesSincePosition, positionSchema } from '@/lib/live/positions';
import { resetDatabase, tester } from '../helpers';

/**
 * The position a page hands its event stream: taken from the running hub when there is one (no query), and never so
 * new that the stream would skip something committed after the page read its data.
 */
beforeAll(resetDatabase);
// Each case starts in a process whose hub has not started, whichever case ran before it.
beforeEach(stopLiveHub);
afterAll(stopLiveHub);

describe('the page’s live position', () => {
  it('comes from the database before the hub runs, and from the running hub after', async () => {
    expect(runningHubPosition()).toBeNull();
    const before = await livePositionForPage();
    expect(positionSchema.safeParse(before).success).toBe(true);
    const hub = await liveHub();
    expect(await livePositionForPage()).toBe(hub.position());
  });

  it('from the hub, still leads the stream to everything committed after it', async () => {
    await liveHub();
    const position = await livePositionForPage();
    const intent = await createIntent({ payload: { page: 'position' }, source: 'live-test' }, tester);
    const since = await changesSincePosition(positionSchema.parse(position));
    expect(since.events.map((e) => e.intentId)).toContain(intent.id);
  });
});
