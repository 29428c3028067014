'use client';

import { useMutation, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useEffect, useId, useRef, useState } from 'react';
import { correctIntentAction } from '@/app/actions/intents';
import { RelativeTime } from '@/components/ui/RelativeTime';
import type { ActionError, ActionResult } from '@/lib/console/action-result';
import { clearDraft, loadDraft, saveDraft } from '@/lib/console/correction-draft';
import { newIdempotencyKey } from '@/lib/console/ids';
import { changesSinceLines, diffLines, formatJson, mergeDiff, overlappingPaths, parseDiffText, recordBefore, touchedPaths, type JsonRecord, type RecordedBefore } from '@/lib/console/json-diff';
import { errorTitle, fieldErrors } from '@/lib/console/messages';
import type { ChangesSince } from '@/lib/intents/changes-since';
import { intentKeys } from '@/lib/intents/keys';
import type { IntentWithCorrections, ReevaluateResult } from '@/lib/shared/intent-types';
import { DiffView } from './DiffView';
import { EditLeaseNotice, useEditLease } from './EditLease';
import { JsonView } from './JsonView';
import { LockWaitNotice } from './LockWaitNotice';
import styles from './intents.module.css';
import { LockHolderLink } from '@/components/locks/LockHolderLink';

type Submission = { diff: JsonRecord; reason: string; source: string; expectedVersion: number; idempotencyKey: string; metadata: { console: { before: RecordedBefore } } };
/** `reviewText`: the reviewer's edit as they may rework it before re-applying (starts as what they sent). */
type Conflict = { submission: Submission; base: JsonRecord; changes: ChangesSince; reviewText: string };
type Outcome = { kind: 'ok'; result: ReevaluateResult } | { kind: 'error'; error: ActionError } | null;

const EMPTY_DIFF = '{\n  \n}';

/**
 * A reviewer's correction. The form keeps the version it was opened at (not the live one), so a change that got
 * in meanwhile is a conflict the reviewer sees and decides on — re-apply on top, or discard — instead of being
 * silently overwritten. Each form instance has its own idempotency key: a double click applies once.
 */
export function CorrectionForm({ intent, lockTimeoutMs }: { intent: IntentWithCorrections; lockTimeoutMs?: number }) {
  const queryClient = useQueryClient();
  const ids = { diff: useId(), reason: useId(), source: useId(), diffHelp: useId() };
  const [opened, setOpened] = useState(() => ({ version: intent.version, payload: intent.payload as JsonRecord }));
  const [key, setKey] = useState(() => newIdempotencyKey('correction'));
  const [text, setText] = useState(EMPTY_DIFF);
  const [reason, setReason] = useState('');
  const [source, setSource] = useState('console');
  const [touched, setTouched] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const inFlight = useRef(false);
  const editLease = useEditLease(intent.id);
  const restored = useRef(false);

  // The draft and any conflict survive a reload: restored once after mount (sessionStorage is the browser's, so
  // not during the server render), then saved on every change.
  useEffect(() => {
    const draft = loadDraft(intent.id);
    restored.current = true;
    if (!draft) return;
    // Restoring browser-only state after hydration is what an effect is for here: reading sessionStorage during
    // render would make the server's and the browser's first render differ.
    /* eslint-disable react-hooks/set-state-in-effect */
    setText(draft.text);
    setReason(draft.reason);
    setSource(draft.source);
    setKey(draft.key);
    setOpened({ version: draft.opened.version, payload: draft.opened.payload as JsonRecord });
    if (draft.conflict) setConflict(draft.conflict as unknown as Conflict);
    /* eslint-enable react-hooks/set-state-in-effect */
  }, [intent.id]);
  useEffect(() => {
    if (!restored.current) return;
    if (!conflict && text === EMPTY_DIFF && !reason.trim()) clearDraft(intent.id);
    else saveDraft(intent.id, { text, reason, source, key, opened, conflict });
  }, [intent.id, text, reason, source, key, opened, conflict]);

  const parsed = parseDiffText(text);
  const preview = parsed.ok ? diffLines(opened.payload, parsed.diff) : [];
  const serverFieldErrors = outcome?.kind === 'error' ? fieldErrors(outcome.error) : {};

  const mutation = useMutation({
    mutationFn: async (submission: Submission): Promise<ActionResult<ReevaluateResult>> => {
      // A second click racing the first gets "still in progress": wait for the first one's stored result.
      for (let attempt = 0; ; attempt++) {
        const result = await correctIntentAction({ id: intent.id, ...submission });
        if (result.ok || result.error.code !== 'idempotency_in_progress' || attempt >= 20) return result;
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    onSuccess: (result, submission) => {
      if (result.ok) {
        setOutcome({ kind: 'ok', result: result.data });
        setConflict(null);
        setText(EMPTY_DIFF);
        setReason('');
        setTouched(false);
        setKey(newIdempotencyKey('correction'));
        // The form now edits the version this correction produced.
        setOpened((o) => ({ version: result.data.version, payload: mergeDiff(o.payload, submission.diff) }));
        return;
      }
      if (result.error.code === 'version_conflict') {
        const changes = (result.error.details as { changes?: ChangesSince } | undefined)?.changes;
        if (changes) {
          setConflict({ submission, base: opened.payload, changes, reviewText: formatJson(submission.diff) });
          setOutcome(null);
          return;
        }
      }
      setOutcome({ kind: 'error', error: result.error });
    },
    onError: (err) => setOutcome({ kind: 'error', error: { code: 'network', message: err instanceof Error ? err.message : String(err) } }),
    onSettled: async () => {
      inFlight.current = false;
      await queryClient.invalidateQueries({ queryKey: intentKeys.detail(intent.id) });
      await queryClient.invalidateQueries({ queryKey: intentKeys.lists() });
    },
  });

  const submit = (submission: Submission) => {
    if (inFlight.current) return;
    inFlight.current = true;
    mutation.mutate(submission);
  };

  const onSubmit = (e: React.FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (!parsed.ok || !reason.trim() || !source.trim()) return;
    submit({ diff: parsed.diff, reason: reason.trim(), source: source.trim(), expectedVersion: opened.version, idempotencyKey: key, metadata: { console: { before: recordBefore(opened.payload, parsed.diff) } } });
  };

  /** Applies the (possibly reworked) edit on the version the intent is at now: their changes stay, mine go on top. */
  const reapply = (diff: JsonRecord) => {
    if (!conflict) return;
    const current = conflict.changes.intent;
    const nextKey = newIdempotencyKey('correction');
    setKey(nextKey);
    setOpened({ version: current.version, payload: current.payload as JsonRecord });
    submit({ ...conflict.submission, diff, expectedVersion: current.version, idempotencyKey: nextKey, metadata: { console: { before: recordBefore(current.payload as JsonRecord, diff) } } });
  };

  const discard = () => {
    if (!conflict) return;
    const current = conflict.changes.intent;
    setConflict(null);
    setOutcome(null);
    setText(EMPTY_DIFF);
    setReason('');
    setTouched(false);
    setKey(newIdempotencyKey('correction'));
    setOpened({ version: current.version, payload: current.payload as JsonRecord });
  };

  if (conflict) {
    return (
      <ThreeWay
        key={`${conflict.submission.expectedVersion}:${conflict.changes.intent.version}`}
        conflict={conflict}
        pending={mutation.isPending}
        onReviewText={(reviewText) => setConflict({ ...conflict, reviewText })}
        onReapply={reapply}
        onDiscard={discard}
        lockTimeoutMs={lockTimeoutMs}
      />
    );
  }

  const diffInvalid = touched || text !== EMPTY_DIFF ? !parsed.ok : false;
  const stale = intent.version > opened.version;

  return (
    <form className={styles.form} onSubmit={onSubmit} onFocusCapture={() => void editLease.take()} aria-label="Correction" noValidate>
      <EditLeaseNotice held={editLease.held} other={editLease.other} />
      {stale && (
        <p className={styles.staleNote} role="status">
          This intent changed since you opened the form (version {opened.version} → {intent.version}). Your correction is checked against version {opened.version}: if it
          conflicts you will see what changed and decide.
        </p>
      )}
      <label className={styles.label} htmlFor={ids.diff}>
        <span>
          Diff (JSON) <span className={styles.hint}>— merged into the payload: only the fields to change, e.g. {'{ "amount": 12.5 }'}</span>
        </span>
      </label>
      <textarea
        id={ids.diff}
        className={`field ${styles.editor}`}
        value={text}
        onChange={(e) => setText(e.target.value)}
        spellCheck={false}
        aria-invalid={diffInvalid || Boolean(serverFieldErrors.diff)}
        aria-describedby={ids.diffHelp}
        rows={6}
        onKeyDown={(e) => {
          if (e.key === 'Tab' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
            // Indent inside the editor; Shift+Tab or Escape then Tab still leave it.
            const el = e.currentTarget;
            if (el.dataset.escaped === 'true') return;
            e.preventDefault();
            const { selectionStart: s, selectionEnd: end } = el;
            const next = `${text.slice(0, s)}  ${text.slice(end)}`;
            setText(next);
            requestAnimationFrame(() => el.setSelectionRange(s + 2, s + 2));
          } else if (e.key === 'Escape') e.currentTarget.dataset.escaped = 'true';
        }}
        onBlur={(e) => {
          e.currentTarget.dataset.escaped = 'false';
          setTouched(true);
        }}
      />
      <div id={ids.diffHelp} aria-live="polite">
        {diffInvalid && !parsed.ok ? (
          <span className={styles.fieldError}>{parsed.message}</span>
        ) : parsed.ok ? (
          <span className={styles.fieldOk}>
            Valid: changes {preview.length} field{preview.length === 1 ? '' : 's'} of version {opened.version}.
          </span>
        ) : (
          <span className={styles.hint}>Tab indents; press Escape, then Tab, to leave the editor.</span>
        )}
        {serverFieldErrors.diff && <span className={styles.fieldError}> {serverFieldErrors.diff}</span>}
      </div>
      {parsed.ok && preview.length > 0 && <DiffView lines={preview} label="Preview of your change" />}
      <div className={styles.formRow}>
        <label className={styles.label} htmlFor={ids.reason}>
          Reason
          <textarea
            id={ids.reason}
            className="field"
            rows={2}
            value={reason}
            maxLength={2000}
            onChange={(e) => setReason(e.target.value)}
            aria-invalid={(touched && !reason.trim()) || Boolean(serverFieldErrors.reason)}
            placeholder="Why this correction? (shown in the history)"
          />
          {touched && !reason.trim() && <span className={styles.fieldError}>Say why: the reason is kept with the correction.</span>}
          {serverFieldErrors.reason && <span className={styles.fieldError}>{serverFieldErrors.reason}</span>}
        </label>
        <label className={styles.label} htmlFor={ids.source}>
          Source
          <input id={ids.source} className="field" value={source} maxLength={255} onChange={(e) => setSource(e.target.value)} aria-invalid={(touched && !source.trim()) || Boolean(serverFieldErrors.source)} />
          <span className={styles.hint}>Where the correction comes from (a ticket, a partner file…)</span>
          {touched && !source.trim() && <span className={styles.fieldError}>Name the source.</span>}
        </label>
      </div>
      <div className={styles.formFoot}>
        <span className="muted">
          Applies to version <strong data-testid="form-version">{opened.version}</strong>
        </span>
        <button type="submit" className="btn btn-primary" disabled={mutation.isPending}>
          {mutation.isPending ? 'Applying…' : 'Apply correction'}
        </button>
      </div>
      <LockWaitNotice pending={mutation.isPending} lockTimeoutMs={lockTimeoutMs} />
      {outcome?.kind === 'ok' && (
        <p className={styles.notice} role="status">
          {outcome.result.alreadyApplied
            ? `This correction was already applied: nothing changed (version ${outcome.result.version}).`
            : `Correction applied: now version ${outcome.result.version}, ${outcome.result.status}.`}
        </p>
      )}
      {outcome?.kind === 'error' && (
        <div className={styles.alert} role="alert">
          <strong>{errorTitle(outcome.error)}.</strong> {outcome.error.message}
          <LockHolderLink error={outcome.error} />
          {outcome.error.code === 'unauthenticated' && (
            <>
              {' '}
              <Link href={`/sign-in?next=/intents/${intent.id}`}>Sign in</Link>
            </>
          )}
        </div>
      )}
    </form>
  );
}

/**
 * The conflict: the reviewer's edit, the intent as it is now, and what got in first (who, when, each field before →
 * after). When the changes touch other fields than the reviewer's, one click merges: theirs stay, the edit goes on
 * top. The edit can be reworked before re-applying. Opens at its headline, which takes the focus.
 */
function ThreeWay({
  conflict,
  pending,
  onReviewText,
  onReapply,
  onDiscard,
  lockTimeoutMs,
}: {
  conflict: Conflict;
  pending: boolean;
  onReviewText: (text: string) => void;
  onReapply: (diff: JsonRecord) => void;
  onDiscard: () => void;
  lockTimeoutMs?: number;
}) {
  const { submission, base, changes, reviewText } = conflict;
  const headline = useRef<HTMLHeadingElement>(null);
  const editorId = useId();
  useEffect(() => {
    headline.current?.scrollIntoView({ block: 'start' });
    headline.current?.focus({ preventScroll: true });
  }, []);
  const current = changes.intent;
  const review = parseDiffText(reviewText);
  const mine = review.ok ? review.diff : submission.diff;
  const theirPaths = changes.corrections.flatMap((c) => touchedPaths(c.diff as JsonRecord));
  const overlap = overlappingPaths(touchedPaths(mine), theirPaths);
  const reapplyLines = diffLines(current.payload as JsonRecord, mine);
  const theirLines = changesSinceLines(
    base,
    changes.corrections.map((c) => c.diff as JsonRecord),
  );
  const statusEvents = changes.events.filter((e) => e.action !== 'correction');
  const edited = review.ok && JSON.stringify(review.diff) !== JSON.stringify(submission.diff);
  return (
    <section className={styles.threeWay} aria-labelledby="conflict-title" data-testid="conflict">
      <div role="alert">
        <h3 id="conflict-title" ref={headline} tabIndex={-1} className={styles.threeWayTitle}>
          Someone changed this intent first: you edited version {submission.expectedVersion}, it is now at version {current.version}.
        </h3>
      </div>
      {overlap.length > 0 ? (
        <p className={styles.overlap} data-testid="conflict-overlap">
          Both changes touch: {overlap.join(', ')}. Re-applying puts your values over theirs; rework your edit below to keep theirs.
        </p>
      ) : (
        <p className={styles.notice} data-testid="conflict-mergeable">
          Their changes touch other fields than yours: merging keeps theirs and applies yours on top.
        </p>
      )}
      <div className={styles.threeWayCols}>
        <section className={styles.threeWayCol} aria-label="Your edit">
          <h3>Your edit (on version {submission.expectedVersion})</h3>
          <DiffView lines={diffLines(base, submission.diff)} label="Your edit as a diff" />
          <p className="muted" style={{ marginTop: '0.4rem' }}>
            Why: {submission.reason} · via {submission.source}
          </p>
        </section>
        <section className={styles.threeWayCol} aria-label="The intent now">
          <h3>
            The intent now (version {current.version}, {current.status})
          </h3>
          <JsonView value={current.payload} label="Current payload" />
          <p className="muted" style={{ margin: '0.5rem 0 0.2rem' }}>
            {edited ? 'Re-applying your reworked edit here would change:' : 'Re-applying your edit here would change:'}
          </p>
          <DiffView lines={reapplyLines} label="Your edit on the current version" />
        </section>
        <section className={styles.threeWayCol} aria-label="Changes since your version">
          <h3>Changed since version {submission.expectedVersion}</h3>
          <ul className={styles.history}>
            {changes.corrections.map((c, i) => (
              <li key={c.id} className={styles.historyItem} data-testid="change-since">
                <div className={styles.historyHead}>
                  <strong>{c.actor}</strong>
                  <span className="muted">
                    <RelativeTime iso={c.createdAt} />
                  </span>
                  <span className="muted">
                    v{c.versionBefore} → v{c.versionAfter}
                  </span>
                </div>
                <p className={styles.reason}>
                  <span className="muted">Why: </span>
                  {c.reason}
                </p>
                <DiffView lines={theirLines[i]} label={`Change by ${c.actor}`} />
              </li>
            ))}
            {statusEvents.map((e) => (
              <li key={e.id} className={styles.historyItem} data-testid="change-since">
                <div className={styles.historyHead}>
                  <strong>{e.actor}</strong>
                  <span className="muted">
                    <RelativeTime iso={e.at} />
                  </span>
                  <span className="muted">
                    {e.fromStatus} → {e.toStatus} (v{e.versionBefore} → v{e.versionAfter})
                  </span>
                </div>
              </li>
            ))}
          </ul>
        </section>
      </div>
      <label className={styles.label} htmlFor={editorId}>
        <span>
          Your edit (JSON) <span className={styles.hint}>— change it before re-applying if you like; it is applied to version {current.version}</span>
        </span>
      </label>
      <textarea
        id={editorId}
        className={`field ${styles.editor}`}
        value={reviewText}
        onChange={(e) => onReviewText(e.target.value)}
        spellCheck={false}
        rows={5}
        aria-invalid={!review.ok}
        data-testid="conflict-editor"
      />
      {!review.ok && <span className={styles.fieldError}>{review.message}</span>}
      <div className={styles.actions}>
        <button type="button" className="btn btn-primary" onClick={() => review.ok && onReapply(review.diff)} disabled={pending || !review.ok}>
          {pending ? 'Applying…' : overlap.length === 0 ? `Merge: keep theirs, apply mine on version ${current.version}` : `Re-apply my edit on version ${current.version}`}
        </button>
        <button type="button" className="btn" onClick={onDiscard} disabled={pending}>
          Discard my edit
        </button>
      </div>
      <LockWaitNotice pending={pending} lockTimeoutMs={lockTimeoutMs} />
    </section>
  );
}
