import { auditActionLabel } from './actions';
import type { AuditEntry } from './log';
import { roleLabel } from '@/lib/shared/roles';

/**
 * One audit entry in words for the audit page: what happened (beyond the action's name) and the reason given,
 * when one was. Pure, so the wording is unit-tested and the page only renders.
 */
export type AuditLine = { label: string; what: string; reason: string | null; link?: { href: string; label: string } };

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : null);
const list = (v: unknown[]): string => v.join(', ') || 'none';
/** Roles as the pages name them ("on-call", not "oncall"). */
const roles = (v: unknown[]): string => list(v.map((r) => roleLabel(String(r))));
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** A value shown in a line of the log: long ones end in an ellipsis (the whole value is in the entry's details). */
const clip = (v: string, max = 120): string => (v.length > max ? `${v.slice(0, max - 1)}…` : v);

export function describeAudit(e: AuditEntry): AuditLine {
  const d = e.details ?? {};
  const reason = text(d.reason);
  const label = auditActionLabel(e.action);
  const move = e.fromStatus && e.toStatus ? `${e.fromStatus} → ${e.toStatus}` : e.toStatus ? `→ ${e.toStatus}` : '';
  const versions = e.versionAfter !== null ? (e.versionBefore === null ? `v${e.versionAfter}` : `v${e.versionBefore} → v${e.versionAfter}`) : '';
  // A bulk change's batch, shortened as the console shows ids: on every row the batch wrote.
  const batch = text(d.batchId) && `batch ${(d.batchId as string).slice(0, 8)}`;
  const join = (...parts: (string | null | false | undefined)[]) => parts.filter(Boolean).join(' · ');
  switch (e.action) {
    case 'created':
      return { label, what: join(e.toStatus && `as ${e.toStatus}`, text(d.source) && `from ${d.source as string}`), reason };
    case 'status_change':
      return { label, what: join(move, versions), reason };
    case 'status_change_refused':
      return {
        label,
        what: join(
          text(d.from) && text(d.to) && `${d.from as string} → ${d.to as string} refused`,
          num(d.version) !== null && `at v${d.version as number}`,
          text(d.why),
          // A bulk change is refused whole when any of its intents cannot move: each of those is on record.
          num(d.batchSize) !== null && `${num(d.refusedInBatch) ?? '?'} of a bulk change of ${d.batchSize as number} could not move; none moved`,
          batch,
        ),
        reason,
      };
    case 'bulk_status_change':
      return { label, what: join(move, versions, batch), reason };
    case 'bulk_batch': {
      const moved = num(d.moved);
      const skipped = num(d.skipped);
      return {
        label,
        what: join(text(d.phase) ?? undefined, text(d.toStatus) && `to ${d.toStatus as string}`, moved !== null && `${moved} moved`, skipped !== null && `${skipped} left as they were`, batch),
        reason,
      };
    }
    case 'correction':
      return { label, what: join(e.fromStatus !== e.toStatus && move, versions, text(d.source) && `via ${d.source as string}`), reason };
    case 'backend_cancel':
    case 'backend_terminate':
      return {
        label,
        what: join(num(d.pid) !== null && `pid ${d.pid as number}`, text(d.applicationName) && `${d.applicationName as string}`, num(d.waitingBehind) !== null && `${d.waitingBehind as number} waiting behind`, d.signalled === false && 'not signalled (already gone)'),
        reason,
      };
    case 'backend_cancel_refused':
    case 'backend_terminate_refused': {
      const refused = (d.refused ?? {}) as Record<string, unknown>;
      return { label, what: join(num(d.pid) !== null && `pid ${d.pid as number}`, text(d.applicationName) && `${d.applicationName as string}`, text(refused.message)), reason };
    }
    case 'pipeline_started': {
      const rerun = (typeof d.rerun === 'object' && d.rerun !== null ? d.rerun : {}) as Record<string, unknown>;
      const from = text(rerun.fromBridge) && `rerun from ${rerun.fromBridge as string}`;
      return { label, what: join(from, num(d.round) !== null && `round ${d.round as number}`, text(d.mode) && (d.mode as string).toLowerCase(), text(d.door) && `via ${d.door as string}`), reason };
    }
    case 'bridge_started':
    case 'bridge_skipped':
    case 'bridge_replayed':
      return { label, what: join(text(d.bridge), text(d.status) && `intent at ${d.status as string}${num(d.version) !== null ? ` v${d.version as number}` : ''}`), reason };
    case 'bridge_completed':
    case 'bridge_failed':
      return { label, what: join(text(d.bridge), text(d.error)), reason };
    case 'pipeline_finished':
      return { label, what: join(text(d.status), text(d.error)), reason };
    case 'pipeline_released':
      return { label, what: join(text(d.error)), reason };
    case 'bridge_waiting':
      return { label, what: join(text(d.bridge)), reason };
    case 'wait_answered':
      // What was answered, not only what became of the answer: "accepted" alone read as if the request had been.
      return { label, what: join(text(d.name) && `“${d.name as string}”`, text(d.outcome) && `answer ${(d.outcome as string).replace(/_/g, ' ')}`, d.answer !== undefined && clip(JSON.stringify(d.answer))), reason };
    case 'wait_opened':
    case 'wait_timed_out':
    case 'wait_resumed':
      return { label, what: join(text(d.name) && `“${d.name as string}”`, text(d.bridge), text(d.outcome) && (d.outcome as string).replace(/_/g, ' '), text(d.onTimeout) && `on timeout: ${d.onTimeout as string}`), reason };
    case 'replay_started':
    case 'replay_finished':
    case 'replay_baseline_pinned':
    case 'replay_baseline_unpinned':
      return { ...describeReplay(e.action, d), label, reason };
    default:
      return { label, what: join(e.subject && e.subject !== e.actor && `user ${e.subject}`, text(d.name) && `“${d.name as string}”`, text(d.prefix) && `${d.prefix as string}…`, Array.isArray(d.roles) && `roles: ${roles(d.roles)}`, Array.isArray(d.from) && Array.isArray(d.to) && `roles: ${roles(d.from)} → ${roles(d.to)}`), reason };
  }
}

/** A replay run's start and finish, and the pinned baseline: which run, and a link to it on the Replay page. */
function describeReplay(action: string, d: Record<string, unknown>): Omit<AuditLine, 'label' | 'reason'> {
  const runId = text(d.runId);
  const run = runId && `run ${runId.slice(0, 8)}`;
  const link = runId ? { href: `/replay?run=${encodeURIComponent(runId)}`, label: 'open run' } : undefined;
  const count = (n: unknown, one: string, many = `${one}s`) => num(n) !== null && `${n as number} ${n === 1 ? one : many}`;
  const join = (...parts: (string | null | false | undefined)[]) => parts.filter(Boolean).join(' · ');
  switch (action) {
    case 'replay_started':
      return { what: join(run, count(d.scenarios, 'scenario'), text(d.size) && `${d.size as string} size`, text(d.door) && `via ${d.door as string}`, text(d.environment)), link };
    case 'replay_finished':
      return {
        what: join(run, text(d.status), text(d.verdict) && `verdict ${d.verdict as string}`, count(d.missed, 'check missed', 'checks missed'), count(d.notJudged, 'target not judged', 'targets not judged'), text(d.error)),
        link,
      };
    case 'replay_baseline_pinned':
      return { what: join(run && `${run} is the baseline`, text(d.replaces) && `instead of run ${(d.replaces as string).slice(0, 8)}`), link };
    default:
      return { what: join(run && `${run} is no longer the baseline`), link };
  }
}
