import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoute } from '@/lib/http/api-router';
import { stopLiveHub } from '@/lib/live/hub';

const { GET: ready } = apiRoute('/api/ready');

describe('GET /api/ready', () => {
  beforeAll(stopLiveHub);
  afterAll(stopLiveHub);

  it('is ready on the first probe after start: it waits for the live feed’s first connection, which that probe starts', async () => {
    const res = await ready(new Request('http://localhost:3000/api/ready'), { params: Promise.resolve({}) });
    const body = await res.json();
    expect(body.checks.live).toEqual({ ok: true, detail: 'listening' });
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ ready: true, checks: { database: { ok: true }, migrations: { ok: true } } });
  });
});
