import { describe, expect, it } from 'vitest';
import { describeAudit } from './describe';
import type { AuditEntry } from './log';

const base: AuditEntry = {
  key: 'intent:1', source: 'intent', id: '1', at: '2026-11-23T18:00:00.000Z', actor: 'ops', action: 'status_change', intentId: null,
  subject: null, fromStatus: null, toStatus: null, versionBefore: null, versionAfter: null, ip: null, details: null,
};

describe('describeAudit', () => {
  it('says a status change as before → after with its versions and reason', () => {
    expect(describeAudit({ ...base, fromStatus: 'PROCESSED', toStatus: 'FAILED', versionBefore: 2, versionAfter: 3, details: { reason: 'card declined' } })).toEqual({
      label: 'Status change',
      what: 'PROCESSED → FAILED · v2 → v3',
      reason: 'card declined',
    });
  });

  it('names the batch of a bulk change and sums up a batch record', () => {
    expect(describeAudit({ ...base, action: 'bulk_status_change', fromStatus: 'RECEIVED', toStatus: 'NORMALIZED', versionBefore: 0, versionAfter: 1, details: { batchId: 'abcdef0123456789' } }).what).toBe(
      'RECEIVED → NORMALIZED · v0 → v1 · batch abcdef01',
    );
    expect(describeAudit({ ...base, action: 'bulk_batch', details: { phase: 'finished', toStatus: 'FAILED', moved: 40, skipped: 2, batchId: 'abcdef0123456789', reason: 'upstream outage' } })).toEqual({
      label: 'Bulk batch',
      what: 'finished · to FAILED · 40 moved · 2 left as they were · batch abcdef01',
      reason: 'upstream outage',
    });
  });

  it('says what an answer to a wait answered, and what became of it', () => {
    expect(describeAudit({ ...base, action: 'wait_answered', details: { name: 'approval', outcome: 'accepted', state: 'answered', answer: { approved: false, note: 'amount too high' } } }).what).toBe(
      '“approval” · answer accepted · {"approved":false,"note":"amount too high"}',
    );
    expect(describeAudit({ ...base, action: 'wait_answered', details: { name: 'approval', outcome: 'too_late', answer: { note: 'x'.repeat(300) } } }).what).toMatch(/^“approval” · answer too late · \{"note":"x+…$/);
  });

  it('describes a Locks action by pid and impact', () => {
    expect(describeAudit({ ...base, action: 'backend_terminate', details: { pid: 4242, applicationName: 'psql', waitingBehind: 3, signalled: true, reason: 'stuck migration' } })).toEqual({
      label: 'Backend terminated (Locks)',
      what: 'pid 4242 · psql · 3 waiting behind',
      reason: 'stuck migration',
    });
    const refused = { pid: 4242, applicationName: 'psql', reason: 'stuck migration', refused: { code: 'cancel_first', message: 'Cancel backend 4242 first' } };
    expect(describeAudit({ ...base, action: 'backend_terminate_refused', details: refused })).toEqual({
      label: 'Backend terminate refused (Locks)',
      what: 'pid 4242 · psql · Cancel backend 4242 first',
      reason: 'stuck migration',
    });
  });

  it('names the pipeline’s runs and steps: the bridge, where the intent stood, and how it ended', () => {
    expect(describeAudit({ ...base, action: 'pipeline_started', details: { round: 2, mode: 'FAILFAST', door: 'worker' } })).toEqual({
      label: 'Pipeline run started',
      what: 'round 2 · failfast · via worker',
      reason: null,
    });
    expect(describeAudit({ ...base, action: 'pipeline_started', details: { round: 3, mode: 'FAILFAST', door: 'console', reason: 'partner is back', rerun: { fromBridge: 'output', reused: ['input'] } } })).toEqual({
      label: 'Pipeline run started',
      what: 'rerun from output · round 3 · failfast · via console',
      reason: 'partner is back',
    });
    expect(describeAudit({ ...base, action: 'bridge_started', details: { bridge: 'normalize', status: 'NORMALIZED', version: 1 } }).what).toBe('normalize · intent at NORMALIZED v1');
    expect(describeAudit({ ...base, action: 'bridge_failed', details: { bridge: 'feedback', error: 'partner timed out' } })).toMatchObject({ label: 'Pipeline step failed', what: 'feedback · partner timed out' });
    expect(describeAudit({ ...base, action: 'pipeline_finished', details: { status: 'succeeded' } })).toMatchObject({ label: 'Pipeline run finished', what: 'succeeded' });
  });

  it('names a replay run, its outcome and the pinned baseline, with a link to the run', () => {
    const runId = '0b7f7c9e-4a55-4d39-9d7e-2f3c1b8a9e10';
    expect(describeAudit({ ...base, action: 'replay_started', details: { runId, scenarios: 9, size: 'small', door: 'console', environment: 'staging' } })).toEqual({
      label: 'Replay run started',
      what: 'run 0b7f7c9e · 9 scenarios · small size · via console · staging',
      reason: null,
      link: { href: `/replay?run=${runId}`, label: 'open run' },
    });
    expect(describeAudit({ ...base, action: 'replay_finished', details: { runId, status: 'finished', verdict: 'smoke', missed: 0, notJudged: 3 } }).what).toBe(
      'run 0b7f7c9e · finished · verdict smoke · 0 checks missed · 3 targets not judged',
    );
    expect(describeAudit({ ...base, action: 'replay_baseline_pinned', details: { runId, replaces: 'abcdef0123456789', reason: 'release 4.2' } })).toMatchObject({
      what: 'run 0b7f7c9e is the baseline · instead of run abcdef01',
      reason: 'release 4.2',
    });
    expect(describeAudit({ ...base, action: 'replay_baseline_unpinned', details: { runId } }).what).toBe('run 0b7f7c9e is no longer the baseline');
  });

  it('describes security events by subject, and keeps an unknown action as recorded', () => {
    expect(describeAudit({ ...base, source: 'auth', action: 'user.roles_changed', subject: 'kim', details: { from: ['viewer'], to: ['viewer', 'oncall'] } }).what).toBe('user kim · roles: viewer → viewer, on-call');
    expect(describeAudit({ ...base, source: 'auth', action: 'user.created', subject: 'lee', details: { roles: [] } }).what).toBe('user lee · roles: none');
    expect(describeAudit({ ...base, action: 'something_new' }).label).toBe('something_new');
  });
});
