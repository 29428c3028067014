/**
 * Every JSON API door, with the permission it needs and how to call it, for the authorization matrix and the
 * fuzz test. `call` takes a ready Request; `path` builds the URL for an intent.
 */
import { startReplay } from '@/lib/replay/runner';
import { finishRun, getRun } from '@/lib/replay/runs';
import { unpinBaseline } from '@/lib/replay/pinning';
import type { Permission } from '@/lib/auth/permissions';
import { eventually } from '../wait';
import { apiRoute } from '@/lib/http/api-router';

const { GET: listIntents, POST: createIntent } = apiRoute('/api/intents');
const { GET: getIntent } = apiRoute('/api/intents/{id}');
const { GET: getAudit } = apiRoute('/api/intents/{id}/audit');
const { GET: getTimeline } = apiRoute('/api/intents/{id}/timeline');
const { POST: postStatus } = apiRoute('/api/intents/{id}/status');
const { POST: postReeval } = apiRoute('/api/intents/{id}/reeval');
const { POST: postBulk } = apiRoute('/api/intents/bulk-status');
const { GET: getLocks } = apiRoute('/api/locks');
const { GET: getAuditLog } = apiRoute('/api/audit');
const { GET: getRowHolders } = apiRoute('/api/console/locks/holders');
const { GET: getEvents } = apiRoute('/api/events');
const { GET: getContention } = apiRoute('/api/console/contention');
const { GET: getCounts } = apiRoute('/api/console/intents/counts');
const { GET: getConflicts } = apiRoute('/api/console/intents/{id}/conflicts');
const { GET: getReplayRuns } = apiRoute('/api/console/replay/runs');
const { GET: getRecentEvents } = apiRoute('/api/console/events/recent');
const { GET: getLeases } = apiRoute('/api/leases');
const { POST: postAcquire } = apiRoute('/api/leases/{resource}/acquire');
const { GET: getPipelineRuns, POST: postPipeline } = apiRoute('/api/intents/{id}/pipeline');
const { GET: getRerunPlan } = apiRoute('/api/intents/{id}/pipeline/plan');
const { GET: getWorkers } = apiRoute('/api/workers');
const { POST: postReplayRun } = apiRoute('/api/replay/runs');
const { POST: postReplayCancel } = apiRoute('/api/replay/runs/{id}/cancel');
const { POST: postReplayBaseline } = apiRoute('/api/replay/runs/{id}/baseline');

export type Door = {
  name: string;
  method: 'GET' | 'POST';
  permission: Permission;
  path: (intentId: string) => string;
  call: (request: Request, intentId: string) => Promise<Response>;
  /** Streams (SSE) and the like are left out of the fuzz test: they have no input to fuzz beyond credentials. */
  fuzz?: false;
  /** A body the door accepts for an intent in status NORMALIZED (so an allowed call succeeds). */
  validBody?: (intentId: string) => unknown;
};

const params = (id: string) => ({ params: Promise.resolve({ id }) });

/**
 * Starts a replay run and, when it started, waits for it to end (reading its row): one run at a time, so the next
 * allowed caller in the matrix gets its own start rather than 409.
 */
async function startReplayAndWait(request: Request): Promise<Response> {
  const res = await postReplayRun(request, undefined);
  if (res.status === 202) {
    const { run } = (await res.clone().json()) as { run: { id: string } };
    await eventually(`replay run ${run.id} to finish`, async () => (await getRun(run.id))?.status !== 'running', { everyMs: 50 });
  }
  return res;
}

export const DOORS: Door[] = [
  { name: 'GET /api/intents', method: 'GET', permission: 'intents.read', path: () => '/api/intents', call: (r) => listIntents(r, undefined) },
  {
    name: 'POST /api/intents',
    method: 'POST',
    permission: 'intents.create',
    path: () => '/api/intents',
    call: (r) => createIntent(r, undefined),
    validBody: () => ({ payload: { order: 'M-1' }, source: 'matrix' }),
  },
  { name: 'GET /api/intents/:id', method: 'GET', permission: 'intents.read', path: (id) => `/api/intents/${id}`, call: (r, id) => getIntent(r, params(id)) },
  { name: 'GET /api/intents/:id/audit', method: 'GET', permission: 'intents.read', path: (id) => `/api/intents/${id}/audit`, call: (r, id) => getAudit(r, params(id)) },
  { name: 'GET /api/intents/:id/timeline', method: 'GET', permission: 'intents.read', path: (id) => `/api/intents/${id}/timeline`, call: (r, id) => getTimeline(r, params(id)) },
  {
    name: 'POST /api/intents/:id/status',
    method: 'POST',
    permission: 'intents.status',
    path: (id) => `/api/intents/${id}/status`,
    call: (r, id) => postStatus(r, params(id)),
    validBody: () => ({ status: 'PROCESSED' }),
  },
  {
    name: 'POST /api/intents/:id/reeval',
    method: 'POST',
    permission: 'intents.correct',
    path: (id) => `/api/intents/${id}/reeval`,
    call: (r, id) => postReeval(r, params(id)),
    validBody: () => ({ diff: { checked: true }, source: 'matrix', reason: 'authorization matrix' }),
  },
  {
    name: 'POST /api/intents/bulk-status',
    method: 'POST',
    permission: 'intents.bulk',
    path: () => '/api/intents/bulk-status',
    call: (r) => postBulk(r, undefined),
    validBody: (id) => ({ ids: [id], status: 'PROCESSED' }),
  },
  { name: 'GET /api/locks', method: 'GET', permission: 'locks.read', path: () => '/api/locks', call: (r) => getLocks(r, undefined), fuzz: false },
  { name: 'GET /api/audit', method: 'GET', permission: 'audit.read', path: () => '/api/audit?limit=5', call: (r) => getAuditLog(r, undefined), fuzz: false },
  { name: 'GET /api/console/locks/holders', method: 'GET', permission: 'locks.read', path: (id) => `/api/console/locks/holders?ids=${id}`, call: (r) => getRowHolders(r, undefined), fuzz: false },
  { name: 'GET /api/events', method: 'GET', permission: 'intents.read', path: () => '/api/events', call: (r) => getEvents(r), fuzz: false },
  { name: 'GET /api/console/contention', method: 'GET', permission: 'contention.read', path: () => '/api/console/contention?window=15m', call: (r) => getContention(r, undefined), fuzz: false },
  { name: 'GET /api/console/intents/counts', method: 'GET', permission: 'intents.read', path: () => '/api/console/intents/counts', call: (r) => getCounts(r, undefined), fuzz: false },
  {
    name: 'GET /api/console/intents/:id/conflicts',
    method: 'GET',
    permission: 'intents.read',
    path: (id) => `/api/console/intents/${id}/conflicts`,
    call: (r, id) => getConflicts(r, params(id)),
  },
  { name: 'GET /api/leases', method: 'GET', permission: 'locks.read', path: () => '/api/leases', call: (r) => getLeases(r, undefined), fuzz: false },
  {
    name: 'POST /api/leases/:resource/acquire',
    method: 'POST',
    permission: 'leases.use',
    // A resource of its own per call, so each allowed call is granted rather than denied by the previous one.
    path: (id) => `/api/leases/matrix-${id}-${Math.random().toString(36).slice(2)}/acquire`,
    call: (r) => postAcquire(r, { params: Promise.resolve({ resource: decodeURIComponent(new URL(r.url).pathname.split('/')[3]) }) }),
    validBody: () => ({ owner: 'matrix', ttlMs: 60_000 }),
    // Any resource name is valid (the fuzzer's malformed ids are fine resources); test/leases/api.test.ts covers bad bodies.
    fuzz: false,
  },
  { name: 'GET /api/console/replay/runs', method: 'GET', permission: 'replay.read', path: () => '/api/console/replay/runs', call: (r) => getReplayRuns(r, undefined), fuzz: false },
  { name: 'GET /api/console/events/recent', method: 'GET', permission: 'intents.read', path: () => '/api/console/events/recent?limit=5', call: (r) => getRecentEvents(r, undefined), fuzz: false },
  {
    name: 'POST /api/intents/:id/pipeline',
    method: 'POST',
    permission: 'pipeline.run',
    path: (id) => `/api/intents/${id}/pipeline`,
    call: (r, id) => postPipeline(r, params(id)),
    validBody: () => ({ mode: 'FAILFAST' }),
  },
  { name: 'GET /api/intents/:id/pipeline', method: 'GET', permission: 'intents.read', path: (id) => `/api/intents/${id}/pipeline`, call: (r, id) => getPipelineRuns(r, params(id)) },
  {
    name: 'GET /api/intents/:id/pipeline/plan',
    method: 'GET',
    permission: 'intents.read',
    path: (id) => `/api/intents/${id}/pipeline/plan?fromBridge=input`,
    call: (r, id) => getRerunPlan(r, params(id)),
  },
  { name: 'GET /api/workers', method: 'GET', permission: 'intents.read', path: () => '/api/workers', call: (r) => getWorkers(r, undefined), fuzz: false },
  {
    name: 'POST /api/replay/runs',
    method: 'POST',
    permission: 'replay.run',
    path: () => '/api/replay/runs',
    call: (r) => startReplayAndWait(r),
    // The smallest real run: one quick scenario at the small size.
    validBody: () => ({ scenarios: ['lock-latency'], size: 'small' }),
    // A valid fuzzed body would start runs; test/replay/replay.test.ts covers bad bodies at this door.
    fuzz: false,
  },
  {
    name: 'POST /api/replay/runs/:id/cancel',
    method: 'POST',
    permission: 'replay.run',
    path: (id) => `/api/replay/runs/${id}/cancel`,
    // A run row in `running` (claimed, not executed) for the call to cancel, closed again afterwards.
    call: async (r) => {
      const run = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', { name: 'matrix' });
      try {
        return await postReplayCancel(r, params(run.id));
      } finally {
        await finishRun(run.id, { status: 'cancelled', verdict: null, progress: run.progress, results: [], error: 'matrix' });
      }
    },
    fuzz: false,
  },
  {
    name: 'POST /api/replay/runs/:id/baseline',
    method: 'POST',
    permission: 'replay.run',
    path: (id) => `/api/replay/runs/${id}/baseline`,
    // A finished run of its own for the call to pin, unpinned again afterwards.
    call: async (r) => {
      const run = await startReplay({ scenarios: ['lock-latency'], size: 'small' }, 'cli', { name: 'matrix' });
      await finishRun(run.id, { status: 'finished', verdict: 'smoke', progress: run.progress, results: [], error: null });
      try {
        return await postReplayBaseline(r, params(run.id));
      } finally {
        await unpinBaseline(run.id, 'matrix');
      }
    },
    validBody: () => ({ pinned: true }),
    fuzz: false,
  },
];
