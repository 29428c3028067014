import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { listAudit } from '@/lib/audit/log';
import { authenticateRequest, requireMetricsAccess } from '@/lib/auth/request';
import type { AuthActor } from '@/lib/auth/types';
import { contentionReport } from '@/lib/contention/queries';
import { db } from '@/lib/db/client';
import { replicaStatus } from '@/lib/db/read';
import { listRecentEvents } from '@/lib/events/recent';
import { outboxStatus } from '@/lib/events/status';
import { createIntent, reevaluateIntent, bulkUpdateStatus, updateIntentStatus } from '@/lib/intents/commands';
import { NotFoundError } from '@/lib/shared/errors';
import { replayHeaders } from '@/lib/intents/idempotency';
import { getIntent, getIntentAudit, getIntentConflicts, listIntents } from '@/lib/intents/queries';
import { bulkStatusSchema, countIntentsQuerySchema, createIntentSchema, reevaluateInputSchema, updateStatusInputSchema } from '@/lib/intents/schemas';
import { parseInput } from '@/lib/shared/validation';
import { acquireBodySchema, refreshBodySchema, releaseBodySchema } from '@/lib/leases/schemas';
import { acquireLease, listLeases, refreshLease, releaseLease } from '@/lib/leases/service';
import { liveHub } from '@/lib/live/hub';
import { liveEventStream, parseResumePosition } from '@/lib/live/stream';
import { rowLockHolders } from '@/lib/locks/holders';
import { getEpisode, listEpisodes } from '@/lib/locks/history/episodes';
import { queriesFor } from '@/lib/locks/mask';
import { takeLocksSnapshot } from '@/lib/locks/queries';
import { metricsText } from '@/lib/metrics/registry';
import { openApiDocument } from '@/lib/openapi/document';
import { pipelineHistory } from '@/lib/pipeline/history';
import { pipelineRequestInputSchema, planRerun, rerunPlanQuerySchema, runOrRerunPipeline } from '@/lib/pipeline/rerun';
import { answerInputSchema, answerWait } from '@/lib/pipeline/waits';
import { runWithComparison } from '@/lib/replay/compare';
import { baselineInputSchema, setBaselineForUser } from '@/lib/replay/pinning';
import { cancelReplayForUser, startReplayForUser } from '@/lib/replay/runner';
import { listRuns } from '@/lib/replay/runs';
import { summarizeRun } from '@/lib/replay/summary';
import { countsUnder } from '@/lib/search/intents';
import { resolveIntentId } from '@/lib/search/ids';
import { getIntentTimeline } from '@/lib/timeline/timeline';
import { timelineQuerySchema } from '@/lib/timeline/types';
import { setClaimingPaused, workersPausedSchema } from '@/lib/workers/control';
import { getWorkersOverview } from '@/lib/workers/queries';
import { readInput, readJsonBody, readKeyedInput } from './respond';

/**
 * What each operation of the JSON API does, keyed by its `operationId` in the operations table
 * (lib/openapi/operations.ts), which says its method, path, schemas and permission. The router (./api-router.ts)
 * matches a request to its operation, checks the caller against the table's permission, and calls the handler here
 * with the path's values and the caller; each handler reads its input, calls the domain function the console's
 * pages call too, and answers. Handlers of open operations (health, readiness, the document, metrics) take no caller.
 */
export type PathValues = Record<string, string>;
export type ApiHandler = (request: Request, params: PathValues, actor: AuthActor, closed: AbortSignal) => Promise<Response | JsonAnswer>;
/** A handler that takes no caller (fewer parameters): the only kind an open operation may have. */
export type OpenHandler = (request: Request, params: PathValues) => Promise<Response | JsonAnswer>;

/**
 * A JSON answer before it becomes bytes: the console's server writes it straight onto Node's response, Next's route
 * turns it into a Response (building a Response and reading its body back costs a Node server more than the rest
 * of a small answer).
 */
export class JsonAnswer {
  constructor(
    readonly body: unknown,
    readonly status = 200,
    readonly headers: Record<string, string> = {},
  ) {}

  toResponse(): Response {
    return Response.json(this.body, { status: this.status, headers: this.headers });
  }
}

const NO_STORE = { 'Cache-Control': 'no-store' };
const json = (body: unknown, init: { status?: number; headers?: Record<string, string> } = {}) => new JsonAnswer(body, init.status, init.headers);
const query = (request: Request) => Object.fromEntries(new URL(request.url).searchParams);

const intentHandlers = {
  createIntent: (async (request, _params, actor) => {
    const intent = await createIntent(await readKeyedInput(request, createIntentSchema), actor);
    return json(intent, { status: 201, headers: { Location: `/api/intents/${intent.id}`, ...replayHeaders(intent) } });
  }) satisfies ApiHandler,
  listIntents: (async (request) => json(await listIntents(query(request)))) satisfies ApiHandler,
  // A whole id, or a unique prefix of 8+ characters as the console shows it (lib/search/ids.ts).
  getIntent: (async (_request, { id }) => json(await getIntent(await resolveIntentId(id)))) satisfies ApiHandler,
  updateIntentStatus: (async (request, { id }, actor) => {
    const result = await updateIntentStatus(await readKeyedInput(request, updateStatusInputSchema, { id }), actor);
    return json(result, { headers: replayHeaders(result) });
  }) satisfies ApiHandler,
  bulkUpdateStatus: (async (request, _params, actor) => {
    const { intents } = await bulkUpdateStatus(await readInput(request, bulkStatusSchema), actor);
    return json({ intents });
  }) satisfies ApiHandler,
  reevaluateIntent: (async (request, { id }, actor) => {
    const result = await reevaluateIntent(await readKeyedInput(request, reevaluateInputSchema, { id }), actor);
    return json(result, { headers: replayHeaders(result) });
  }) satisfies ApiHandler,
  getIntentAudit: (async (_request, { id }) => json(await getIntentAudit(await resolveIntentId(id)))) satisfies ApiHandler,
  getIntentTimeline: (async (request, { id }) => {
    // The query is checked before the id is looked up: a bad parameter is a 400 whichever intent it names.
    const page = parseInput(timelineQuerySchema, query(request));
    return json(await getIntentTimeline(await resolveIntentId(id), page));
  }) satisfies ApiHandler,
  /** Runs the BridgeSet on the intent (or reruns it from `fromBridge`): 200 `{ intent, run }`, 423 `lock_timeout` while another execution holds it. */
  runPipeline: (async (request, { id }, actor) => json(await runOrRerunPipeline(await readInput(request, pipelineRequestInputSchema, { id }), actor, { door: 'api' }))) satisfies ApiHandler,
  /** An answer to a bridge's wait: 200 `{ outcome, wait }` (accepted or already applied), 409 when it cannot apply. */
  answerPipelineWait: (async (request, { id }, actor) => json(await answerWait(await readInput(request, answerInputSchema, { id }), actor))) satisfies ApiHandler,
  // The query is checked before the id is resolved: a bad query is 400 whether or not the intent exists.
  planPipelineRerun: (async (request, { id }) => {
    const { fromBridge } = parseInput(rerunPlanQuerySchema, query(request));
    return json(await planRerun({ fromBridge, id: await resolveIntentId(id) }));
  }) satisfies ApiHandler,
  listPipelineRuns: (async (_request, { id }) => json(await pipelineHistory(await resolveIntentId(id)))) satisfies ApiHandler,
};

const operationsHandlers = {
  listLeases: (async (request, _params, actor) => json(await listLeases(query(request), actor), { headers: NO_STORE })) satisfies ApiHandler,
  acquireLease: (async (request, { resource }, actor) => json(await acquireLease(resource, await readInput(request, acquireBodySchema), actor))) satisfies ApiHandler,
  refreshLease: (async (request, { resource }, actor) => json(await refreshLease(resource, await readInput(request, refreshBodySchema), actor))) satisfies ApiHandler,
  releaseLease: (async (request, { resource }, actor) => json(await releaseLease(resource, await readInput(request, releaseBodySchema), actor))) satisfies ApiHandler,
  getWorkers: (async () => json(await getWorkersOverview(), { headers: NO_STORE })) satisfies ApiHandler,
  setWorkersClaiming: (async (request, _params, actor) => {
    const { paused } = await readInput(request, workersPausedSchema);
    return json(await setClaimingPaused(paused, actor), { headers: NO_STORE });
  }) satisfies ApiHandler,
  listAudit: (async (request) => json(await listAudit(query(request)), { headers: NO_STORE })) satisfies ApiHandler,
  getLocks: (async (request, _params, actor) => {
    const params = new URL(request.url).searchParams;
    const snapshot = await takeLocksSnapshot({ limit: params.get('limit') ?? undefined, all: params.get('all') ?? undefined });
    return json(queriesFor(actor, snapshot), { headers: NO_STORE });
  }) satisfies ApiHandler,
  listLockEpisodes: (async (request, _params, actor) => json(queriesFor(actor, await listEpisodes(query(request))), { headers: NO_STORE })) satisfies ApiHandler,
  getLockEpisode: (async (_request, { id }, actor) => {
    const episode = await getEpisode({ id });
    if (!episode) throw new NotFoundError(`Lock episode ${id}`, { id });
    return json(queriesFor(actor, episode), { headers: NO_STORE });
  }) satisfies ApiHandler,
  getMetrics: (async (request) => {
    requireMetricsAccess(request);
    const { body, contentType } = await metricsText();
    return new Response(body, { status: 200, headers: { 'Content-Type': contentType, ...NO_STORE } });
  }) satisfies ApiHandler,
  startReplay: (async (request, _params, actor) => {
    const run = await startReplayForUser(actor, await readJsonBody(request), 'api');
    return json({ run: summarizeRun(run) }, { status: 202, headers: { Location: `/api/console/replay/runs/${run.id}`, ...NO_STORE } });
  }) satisfies ApiHandler,
  cancelReplay: (async (_request, { id }, actor) => json(await cancelReplayForUser(actor, id), { headers: NO_STORE })) satisfies ApiHandler,
  setReplayBaseline: (async (request, { id }, actor) => json(await setBaselineForUser(actor, await readInput(request, baselineInputSchema, { id })), { headers: NO_STORE })) satisfies ApiHandler,
};

const consoleHandlers = {
  getContentionReport: (async (request) => {
    const window = new URL(request.url).searchParams.get('window') ?? undefined;
    return json(await contentionReport({ window }), { headers: NO_STORE });
  }) satisfies ApiHandler,
  countIntents: (async (request) => json(await countsUnder(parseInput(countIntentsQuerySchema, query(request), 'query')))) satisfies ApiHandler,
  getIntentConflicts: (async (_request, { id }) => json(await getIntentConflicts(id))) satisfies ApiHandler,
  getOutboxStatus: (async () => json(await outboxStatus(), { headers: NO_STORE })) satisfies ApiHandler,
  listOutboxEvents: (async (request) => json(await listRecentEvents(query(request)), { headers: NO_STORE })) satisfies ApiHandler,
  getRowLockHolders: (async (request, _params, actor) => json(queriesFor(actor, { holders: await rowLockHolders(query(request)) }), { headers: NO_STORE })) satisfies ApiHandler,
  listReplayRuns: (async () => json({ runs: (await listRuns(30)).map(summarizeRun) }, { headers: NO_STORE })) satisfies ApiHandler,
  getReplayRun: (async (request, { id }) => {
    const found = await runWithComparison(id, query(request));
    if (!found) throw new NotFoundError(`Replay run ${id}`, { id });
    return json(found, { headers: NO_STORE });
  }) satisfies ApiHandler,
  getEvents,
};

/**
 * Server-sent events: every change committed by any console instance (Postgres LISTEN/NOTIFY → lib/live), with
 * database positions as event ids so a reconnecting page resumes without missing anything. See lib/live/stream.ts.
 * The stream re-checks its credential while it lives (revoked, disabled, signed out or a role change ends it), ends
 * after a maximum lifetime, and one user holds a bounded number at a time.
 */
async function getEvents(request: Request, _params: PathValues, actor: AuthActor, closed: AbortSignal): Promise<Response> {
  const roles = [...actor.roles].sort().join(',');
  const stillAllowed = async () => {
    try {
      const now = await authenticateRequest(request);
      return !!now && now.userId === actor.userId && [...now.roles].sort().join(',') === roles && now.roles.length > 0;
    } catch (err) {
      // A 401/403 from the credential is a revocation; anything else (the database) is decided at the next check.
      if (err && typeof err === 'object' && 'httpStatus' in err) return false;
      throw err;
    }
  };
  const since = parseResumePosition(request.headers.get('last-event-id'), new URL(request.url).searchParams.get('since'));
  return liveEventStream(since, closed, { userId: actor.userId, stillAllowed });
}

const metaHandlers = {
  /** Liveness and database reachability, for load balancers and the start script. */
  getHealth: (async () => {
    try {
      await db().$queryRaw`SELECT 1`;
      return json({ ok: true, db: 'up' });
    } catch (err) {
      console.error('[health] database check failed:', err);
      return json({ ok: false, db: 'down', error: { code: 'db_unavailable', message: 'The database is not reachable.' } }, { status: 503 });
    }
  }) satisfies ApiHandler,
  getReadiness,
  getOpenApiDocument: (async () => json(openApiDocument(), { headers: { 'Cache-Control': 'no-cache' } })) satisfies ApiHandler,
};

type Check = { ok: boolean; detail: string };

/** Migrations this build ships that the database has not finished applying. */
async function pendingMigrations(): Promise<string[]> {
  const shipped = (await readdir(join(process.cwd(), 'prisma', 'migrations'), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  const rows = await db().$queryRaw<{ name: string }[]>`
    SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
  const applied = new Set(rows.map((r) => r.name));
  return shipped.filter((name) => !applied.has(name)).sort();
}

/**
 * Readiness, for a load balancer deciding whether to send traffic here (liveness is /api/health): the database
 * answers, it has every migration this build expects (an instance of a newer release waits until the upgrade's
 * migrations are applied), and the live feed is listening. Says which check failed. With read replicas, each one's
 * lag (ms and bytes of WAL) and whether it is in rotation.
 */
/** How long a readiness probe waits for the live feed's connection being made. */
const LIVE_READY_WAIT_MS = 3_000;

async function getReadiness(): Promise<JsonAnswer> {
  const checks: Record<string, Check> = {};
  try {
    const pending = await pendingMigrations();
    checks.database = { ok: true, detail: 'up' };
    checks.migrations = pending.length ? { ok: false, detail: `${pending.length} migration(s) not applied yet: ${pending.join(', ')}` } : { ok: true, detail: 'all applied' };
  } catch {
    checks.database = { ok: false, detail: 'not reachable, or its schema is not this console’s' };
  }
  try {
    const hub = await liveHub();
    // The hub starts on first use, which may be this very probe: give its first connection a moment, so that an
    // instance that just started is not reported unready for a connection it is making.
    const listening = hub.isListening() || (await hub.whenListening(LIVE_READY_WAIT_MS));
    checks.live = listening
      ? { ok: true, detail: 'listening' }
      : { ok: false, detail: hub.hasListened() ? 'not listening (reconnecting to the database)' : 'not listening yet (connecting to the database)' };
  } catch {
    checks.live = { ok: false, detail: 'could not start' };
  }
  const ready = Object.values(checks).every((c) => c.ok);
  // Read replicas never make an instance unready: a replica out of rotation sends its reads to the primary.
  // Named by their place in DATABASE_READ_URL: this answer is open, and host names are nobody's business outside.
  const replicas = (await replicaStatus().catch(() => [])).map(({ host: _host, ...shown }) => shown);
  return json({ ready, checks, ...(replicas.length ? { replicas } : {}) }, { status: ready ? 200 : 503, headers: NO_STORE });
}

export const API_HANDLERS: Record<string, ApiHandler> = { ...intentHandlers, ...operationsHandlers, ...consoleHandlers, ...metaHandlers };

/**
 * HEAD answers of their own, where running GET and dropping its body would be wrong: HEAD on the event stream
 * answers what GET would (authorisation, headers) without opening a stream, which would otherwise leave a
 * subscription and its timers behind for good. Every other GET operation answers HEAD by running GET.
 */
export const HEAD_HANDLERS: Record<string, ApiHandler> = {
  getEvents: async () => new Response(null, { status: 200, headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform' } }),
};
