'use client';

import { useEffect, useId, useRef } from 'react';
import { changesSinceLines, diffLines, overlappingPaths, parseDiffText, touchedPaths, type JsonRecord } from '@/lib/console/json-diff';
import { LockWaitNotice } from '../LockWaitNotice';
import styles from '../intents.module.css';
import { ConflictColumns } from './ConflictColumns';
import type { Conflict } from './types';

/**
 * The conflict: the reviewer's edit, the intent as it is now, and what got in first (who, when, each field before →
 * after). When the changes touch other fields than the reviewer's, one click merges: theirs stay, the edit goes on
 * top. The edit can be reworked before re-applying. Opens at its headline, which takes the focus.
 */
export function ConflictView({
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
  const theirLines = changesSinceLines(
    base,
    changes.corrections.map((c) => c.diff as JsonRecord),
  );
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
      <ConflictColumns submission={submission} base={base} changes={changes} reapplyLines={diffLines(current.payload as JsonRecord, mine)} theirLines={theirLines} edited={edited} />
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
      <LockWaitNotice pending={pending} lockTimeoutMs={lockTimeoutMs} intentIds={[current.id]} />
    </section>
  );
}
