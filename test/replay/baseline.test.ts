import { beforeEach, describe, expect, it } from 'vitest';
import { listAudit } from '@/lib/audit/log';
import { db } from '@/lib/db/client';
import { apiRoute } from '@/lib/http/api-router';
import { runWithComparison } from '@/lib/replay/compare';
import { pinBaseline, pinnedBaseline, unpinBaseline } from '@/lib/replay/pinning';
import { startReplay } from '@/lib/replay/runner';
import { finishRun, getRun } from '@/lib/replay/runs';
import type { ReplayRunView, ScenarioResult } from '@/lib/replay/types';
import { checksFor, verdictOf } from '@/lib/replay/verdict';
import { DEFAULT_TARGETS } from '@/lib/replay/targets';
import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { resetDatabase } from '../helpers';

/**
 * The pinned baseline: pinning and unpinning through the API (permission, audit, bad input naming the field), which
 * run a run is compared with (the choice, the pinned baseline, the previous comparable run), and that a run's start
 * and finish appear in the audit log.
 */
const { POST: postBaseline } = apiRoute('/api/replay/runs/{id}/baseline');
const { GET: getRunRoute } = apiRoute('/api/console/replay/runs/{id}');
const engineer = { name: 'release-engineer' };

/** A lock-latency result with these figures (100 locks: a full-size run), judged like a real one. */
function lockLatency(p95Ms: number): ScenarioResult {
  const measures = { calls: 100, samples: 100, p50Ms: p95Ms / 2, p95Ms, p99Ms: p95Ms + 1 };
  const checks = checksFor('lock-latency', measures, DEFAULT_TARGETS);
  return {
    name: 'lock-latency', title: 'Uncontended lock acquisition', source: 'test', startedAt: new Date().toISOString(), durationMs: 10,
    latency: { count: 100, min: 0.1, mean: p95Ms / 2, p50: p95Ms / 2, p95: p95Ms, p99: p95Ms + 1, max: p95Ms + 2 },
    outcomes: { calls: 100, succeeded: 100, alreadyApplied: 0, conflicts: 0, retries: 0, lockTimeouts: 0, deadlocks: 0, failed: {}, failedExamples: {}, engine: {} },
    measures, checks, verdict: verdictOf(checks), notes: [],
  };
}

/** A finished full-size lock-latency run with this p95, recorded as the runner records one. */
async function finishedRun(p95Ms: number): Promise<ReplayRunView> {
  const run = await startReplay({ scenarios: ['lock-latency'], size: 'full' }, 'cli', engineer, { environment: 'development' });
  const results = [lockLatency(p95Ms)];
  return finishRun(run.id, { status: 'finished', verdict: verdictOf(results[0].checks), progress: { ...run.progress, done: 1 }, results, error: null });
}

async function auditRows(action: string) {
  return db().$queryRaw<{ actor: string; details: Record<string, unknown> }[]>`SELECT actor, details FROM audit_events WHERE action = ${action} ORDER BY id`;
}

const pin = (id: string, token: string, body: unknown) => postBaseline(apiRequest(`/api/replay/runs/${id}/baseline`, { method: 'POST', token, body }), { params: Promise.resolve({ id }) });

beforeEach(async () => {
  await resetDatabase();
  await resetAuth();
  await db().$executeRaw`TRUNCATE replay_runs`;
});

describe('pinning a baseline', () => {
  it('pins over the API for a release engineer, audited under their name, and the comparison uses it', async () => {
    const { token, user } = await userWithToken(['release']);
    const base = await finishedRun(2);
    const previous = await finishedRun(2.1);
    const current = await finishedRun(9);

    const res = await pin(base.id, token, { pinned: true, note: 'release 4.2' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ changed: true, baseline: { runId: base.id, pinnedBy: user.username, note: 'release 4.2' } });
    expect((await getRun(base.id))?.pinnedBy).toBe(user.username);
    expect(await auditRows('replay_baseline_pinned')).toEqual([{ actor: user.username, details: { runId: base.id, replaces: null, reason: 'release 4.2' } }]);
    // Filterable on the Audit page like every other action.
    const page = await listAudit({ action: 'replay_baseline_pinned' });
    expect(page.items.map((e) => e.details?.runId)).toEqual([base.id]);

    // The run is compared with the pinned baseline, not with the run just before it.
    const cmp = (await runWithComparison(current.id))!;
    expect(cmp).toMatchObject({ comparedWith: { why: 'pinned', baselineNotUsed: null }, baseline: { runId: base.id } });
    expect(cmp.previous?.id).toBe(base.id);
    expect(cmp.comparison.regressions).toBeGreaterThan(0);
    expect(cmp.candidates.map((c) => [c.id, c.pinned])).toEqual([
      [previous.id, false],
      [base.id, true],
    ]);
    // Any earlier run of its scenarios may be chosen instead, through the same read the page uses.
    const chosen = await getRunRoute(apiRequest(`/api/console/replay/runs/${current.id}?against=${previous.id}`, { token }), { params: Promise.resolve({ id: current.id }) });
    expect(chosen.status).toBe(200);
    expect(await chosen.json()).toMatchObject({ comparedWith: { why: 'chosen' }, previous: { id: previous.id } });
    const notEarlier = await getRunRoute(apiRequest(`/api/console/replay/runs/${previous.id}?against=${current.id}`, { token }), { params: Promise.resolve({ id: previous.id }) });
    expect(notEarlier.status).toBe(400);
    expect((await notEarlier.json()).error.details.fields[0].field).toBe('against');
    const malformed = await getRunRoute(apiRequest(`/api/console/replay/runs/${current.id}?against=yesterday`, { token }), { params: Promise.resolve({ id: current.id }) });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.details.fields[0].field).toBe('against');

    // Pinning the same run again changes nothing and is not audited again; pinning another moves the pin.
    expect(await (await pin(base.id, token, { pinned: true })).json()).toMatchObject({ changed: false });
    expect(await (await pin(previous.id, token, { pinned: true })).json()).toMatchObject({ changed: true, baseline: { runId: previous.id } });
    expect((await auditRows('replay_baseline_pinned')).map((r) => r.details.replaces)).toEqual([null, base.id]);
    expect((await getRun(base.id))?.pinnedAt).toBeNull();

    // Unpinned: the run is compared with the previous comparable run again.
    expect(await (await pin(previous.id, token, { pinned: false })).json()).toEqual({ changed: true, baseline: null });
    expect(await auditRows('replay_baseline_unpinned')).toEqual([{ actor: user.username, details: { runId: previous.id } }]);
    expect(await (await pin(previous.id, token, { pinned: false })).json()).toEqual({ changed: false, baseline: null });
    expect((await runWithComparison(current.id))!).toMatchObject({ comparedWith: { why: 'previous' }, previous: { id: previous.id }, baseline: null });
  });

  it('refuses a viewer (403), and changes and audits nothing', async () => {
    const { token } = await userWithToken(['viewer']);
    const run = await finishedRun(2);
    const res = await pin(run.id, token, { pinned: true });
    expect(res.status).toBe(403);
    const { error } = await res.json();
    expect(error.code).toBe('forbidden');
    expect(error.message).toContain('needs one of the admin or release roles');
    expect(await pinnedBaseline()).toBeNull();
    expect(await auditRows('replay_baseline_pinned')).toEqual([]);
  });

  it('answers bad input with a 400 naming the field, and a run that cannot be a baseline with 404 or 409', async () => {
    const { token } = await userWithToken(['admin']);
    const run = await finishedRun(2);
    const fieldOf = async (res: Response) => {
      expect(res.status).toBe(400);
      return ((await res.json()).error.details.fields as { field: string }[]).map((f) => f.field);
    };
    expect(await fieldOf(await pin(run.id, token, { pinned: 'yes' }))).toEqual(['pinned']);
    expect(await fieldOf(await pin(run.id, token, {}))).toEqual(['pinned']);
    expect(await fieldOf(await pin(run.id, token, { pinned: true, note: 'x'.repeat(201) }))).toEqual(['note']);
    expect(await fieldOf(await pin(run.id, token, { pinned: true, actor: 'someone-else' }))).toEqual(['actor']);
    expect(await fieldOf(await pin('not-a-run', token, { pinned: true }))).toEqual(['id']);

    const missing = await pin('00000000-0000-4000-8000-000000000000', token, { pinned: true });
    expect(missing.status).toBe(404);
    const running = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', engineer, { environment: 'development' });
    const refused = await pin(running.id, token, { pinned: true });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error.code).toBe('replay_not_finished');
    expect(await pinnedBaseline()).toBeNull();
    expect(await auditRows('replay_baseline_pinned')).toEqual([]);
    await finishRun(running.id, { status: 'cancelled', verdict: null, progress: running.progress, results: [], error: 'test' });
  });

  it('keeps one baseline when several people pin at once', async () => {
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await finishedRun(2 + i / 10));
    const results = await Promise.all(runs.map((r, i) => pinBaseline(r.id, `engineer-${i}`)));
    expect(results.every((r) => r.changed)).toBe(true);
    const [{ n }] = await db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM replay_runs WHERE pinned_at IS NOT NULL`;
    expect(n).toBe(1);
    // Each pin after the first names the pin it moved: the audit log tells the whole story.
    expect((await auditRows('replay_baseline_pinned')).filter((r) => r.details.replaces === null)).toHaveLength(1);
    await unpinBaseline((await pinnedBaseline())!.runId, 'engineer-0');
  });

  it('does not compare with a pinned baseline of another size, and says why', async () => {
    const full = await finishedRun(2);
    await pinBaseline(full.id, 'engineer');
    const small = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', engineer, { environment: 'development' });
    await finishRun(small.id, { status: 'finished', verdict: 'smoke', progress: small.progress, results: [], error: null });
    const cmp = (await runWithComparison(small.id))!;
    expect(cmp.comparedWith.why).toBe('none');
    expect(cmp.comparedWith.baselineNotUsed).toMatch(/ran at full size, this run at small/);
    expect(cmp.candidates.map((c) => c.id)).toEqual([full.id]);
  });
});

describe('replay runs in the audit log', () => {
  it('records who started a run, from where, and how it finished', async () => {
    const run = await finishedRun(9);
    const started = await auditRows('replay_started');
    expect(started).toEqual([{ actor: 'release-engineer', details: expect.objectContaining({ runId: run.id, door: 'cli', environment: 'development', scenarios: 1, size: 'full' }) }]);
    const finished = await auditRows('replay_finished');
    expect(finished).toEqual([{ actor: 'release-engineer', details: expect.objectContaining({ runId: run.id, status: 'finished', verdict: 'fail', missed: 1, notJudged: 0 }) }]);
    expect((await listAudit({ actor: 'release-engineer' })).items.map((e) => e.action)).toEqual(['replay_finished', 'replay_started']);
  });
});
