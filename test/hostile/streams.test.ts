import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { db } from '@/lib/db/client';
import { revokeSession } from '@/lib/auth/sessions';
import { liveHub } from '@/lib/live/hub';
import { openStreamCount, STREAM_LIMITS, streamReauthorisations } from '@/lib/live/stream';
import { apiRequest, resetAuth, userWithSession, userWithToken } from '../auth-helpers';
import { resetDatabase } from '../helpers';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: openEvents, HEAD: headEvents } = apiRoute('/api/events');

/**
 * Event-stream lifecycle through the route itself: only GET subscribes; a stream is re-authorised while it lives
 * and ends (`event: end`) when its credential stops working or its roles change; it ends after its lifetime; and a
 * user holds a bounded number at once. Limits are shortened for the test (the rules, not the numbers, are tested).
 */
const saved = { ...STREAM_LIMITS };

type Open = { response: Response; text: () => string; ended: Promise<string>; abort: () => void };

function consume(response: Response, controller: AbortController): Open {
  let buffer = '';
  const ended = (async () => {
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
      }
    } catch {
      // aborted
    }
    return buffer;
  })();
  return { response, text: () => buffer, ended, abort: () => controller.abort() };
}

async function open(init: Parameters<typeof apiRequest>[1]): Promise<Open> {
  const controller = new AbortController();
  const request = new Request(apiRequest('/api/events', init), { signal: controller.signal });
  const response = await openEvents(request);
  return consume(response, controller);
}

function endReason(text: string): string | null {
  const match = /event: end\ndata: (\{[^\n]*\})/.exec(text);
  return match ? (JSON.parse(match[1]) as { reason: string }).reason : null;
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

beforeEach(async () => {
  await resetDatabase();
  await resetAuth();
  Object.assign(STREAM_LIMITS, { reauthMs: 100, maxLifetimeMs: 60_000, maxPerUser: 3 });
});

afterEach(() => {
  Object.assign(STREAM_LIMITS, saved);
});

describe('event streams', () => {
  it('HEAD answers like GET without subscribing, however often', async () => {
    const { token } = await userWithToken(['viewer']);
    const hub = await liveHub();
    const before = { subscribers: hub.subscriberCount(), streams: openStreamCount() };
    for (let i = 0; i < 50; i++) {
      const response = await headEvents(apiRequest('/api/events', { method: 'HEAD', token }));
      expect(response.status).toBe(200);
      expect(response.body).toBeNull();
    }
    expect((await headEvents(apiRequest('/api/events', { method: 'HEAD' }))).status).toBe(401);
    expect(hub.subscriberCount()).toBe(before.subscribers);
    expect(openStreamCount()).toBe(before.streams);
  });

  it('a revoked token ends the stream within seconds', async () => {
    const { token, tokenId } = await userWithToken(['viewer']);
    const stream = await open({ token });
    expect(stream.response.status).toBe(200);
    await db().apiToken.update({ where: { id: tokenId }, data: { revokedAt: new Date() } });
    expect(endReason(await within(stream.ended, 15_000))).toBe('unauthorized');
    expect(openStreamCount()).toBe(0);
  });

  it('a disabled user ends the stream', async () => {
    const { token, user } = await userWithToken(['viewer']);
    const stream = await open({ token });
    await db().user.update({ where: { id: user.id }, data: { disabled: true } });
    expect(endReason(await within(stream.ended, 15_000))).toBe('unauthorized');
  });

  it('a signed-out session ends the stream', async () => {
    const { cookie, secret } = await userWithSession(['viewer']);
    const stream = await open({ cookie });
    expect(stream.response.status).toBe(200);
    await revokeSession(secret);
    expect(endReason(await within(stream.ended, 15_000))).toBe('unauthorized');
  });

  it('a role change ends the stream (the client reconnects with its new roles)', async () => {
    const { token, user } = await userWithToken(['viewer']);
    const stream = await open({ token });
    await db().user.update({ where: { id: user.id }, data: { roles: ['viewer', 'operator'] } });
    expect(endReason(await within(stream.ended, 15_000))).toBe('unauthorized');
  });

  it('an unchanged credential keeps the stream open across many checks', async () => {
    const { token } = await userWithToken(['viewer']);
    const stream = await open({ token });
    const before = streamReauthorisations();
    await eventually('five re-authorisations of the open stream', () => streamReauthorisations() >= before + 5);
    expect(endReason(stream.text())).toBeNull();
    expect(stream.text()).toContain('event: ready');
    stream.abort();
    await stream.ended;
    expect(openStreamCount()).toBe(0);
  });

  it('ends after its maximum lifetime, with an id to resume from', async () => {
    STREAM_LIMITS.maxLifetimeMs = 300;
    const { token } = await userWithToken(['viewer']);
    const stream = await open({ token });
    const text = await within(stream.ended, 15_000);
    expect(endReason(text)).toBe('lifetime');
    const lastId = [...text.matchAll(/^id: (.+)$/gm)].pop()?.[1];
    expect(lastId).toBeTruthy();
    const resumed = await open({ token, headers: { 'last-event-id': lastId! } });
    expect(resumed.response.status).toBe(200);
    await eventually('the resumed stream to say where it starts', () => resumed.text().includes('"resumed":'));
    expect(resumed.text()).toContain('"resumed":true');
    resumed.abort();
    await resumed.ended;
  });

  it('a Last-Event-ID that is not a position is ignored (a fresh start, not an error per request); such a ?since= is a 400 naming it', async () => {
    const { token } = await userWithToken(['viewer']);
    const logged = vi.spyOn(console, 'error');
    try {
      const hostile = ['9999999999999999999.1', '1.9999999999999999999', '99999999999999999999.1', '-1.2', '1.2.3', '0x10.1', 'abc', '1', '1.2 x', '1.2;3'];
      for (const id of hostile) {
        // The query parameter is the caller's input: refused, naming it, before any stream opens.
        const refused = await openEvents(apiRequest(`/api/events?since=${encodeURIComponent(id)}`, { token }));
        expect({ id, status: refused.status }).toEqual({ id, status: 400 });
        expect(await refused.json()).toMatchObject({ error: { details: { fields: [{ field: 'since' }] } } });
        // The header is the browser's own reconnect (a proxy may mangle it): ignored.
        for (const headers of [{ 'last-event-id': id }] as Record<string, string>[]) {
          const query = '';
          const controller = new AbortController();
          const response = await openEvents(new Request(apiRequest(`/api/events${query}`, { token, headers }), { signal: controller.signal }));
          expect({ id, status: response.status }).toEqual({ id, status: 200 });
          const stream = consume(response, controller);
          // The ready event says where the stream starts: not resumed from a position it could not read.
          await eventually('the ready event', () => stream.text().includes('"resumed":'));
          expect({ id, query, text: stream.text() }).toEqual({ id, query, text: expect.stringContaining('"resumed":false') });
          stream.abort();
          await stream.ended;
        }
      }
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
    expect(openStreamCount()).toBe(0);
  });

  it('caps the streams one user holds; others are unaffected', async () => {
    const a = await userWithToken(['viewer']);
    const b = await userWithToken(['viewer']);
    const streams = [await open({ token: a.token }), await open({ token: a.token }), await open({ token: a.token })];
    const refused = await openEvents(apiRequest('/api/events', { token: a.token }));
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_streams');
    const other = await open({ token: b.token });
    expect(other.response.status).toBe(200);
    streams[0].abort();
    await streams[0].ended;
    const again = await open({ token: a.token });
    expect(again.response.status).toBe(200);
    for (const s of [...streams.slice(1), other, again]) s.abort();
    await Promise.all([...streams, other, again].map((s) => s.ended));
    expect(openStreamCount()).toBe(0);
  });
});
