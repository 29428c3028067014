'use client';

import { useState } from 'react';
import { answerWaitAction } from '@/app/actions/pipeline';
import styles from '@/components/locks/console.module.css';
import { ConfirmDialog } from '@/components/ui/ConfirmDialog';
import { formatUtc } from '@/components/ui/time';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import { intentKeys } from '@/lib/intents/keys';
import type { WaitView } from '@/lib/pipeline/waits';
import type { JsonObject } from '@/lib/shared/json';
import own from './wait.module.css';

const RULE: Record<WaitView['onTimeout'], string> = {
  fail: 'the intent fails',
  retry: 'the attempt fails and the next one asks again',
  continue: 'the run goes on with the default answer',
};

/** The schema without its `$schema` line, which says which JSON Schema dialect it is and nothing about the answer. */
function withoutDialect(schema: JsonObject): JsonObject {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/**
 * What the intent's pipeline waits for, and until when, with the operator's answer (a person's decision): the same
 * function as POST /api/intents/:id/pipeline/answers. An `approval` is answered with Approve or Reject and a note
 * (ApprovalForm);
 * any other wait with a JSON object (its shape shown when the bridge declared one). Once answered, a worker resumes the run and the panel follows the intent live.
 */
export function WaitPanel({ id, wait, canAnswer, onDone }: { id: string; wait: WaitView; canAnswer: boolean; onDone: (m: { tone: 'ok' | 'error'; text: string }) => void }) {
  const [body, setBody] = useState('{}');
  // A parse error of the JSON answer stays here; what the server answered goes to the pipeline panel's banner, which
  // outlives this panel (it goes once the wait is answered).
  const [message, setMessage] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const answer = useActionMutation({
    action: (answerBody: JsonObject) => answerWaitAction({ id, name: wait.name, body: answerBody }),
    onOk: (data) => onDone({ tone: 'ok', text: data.outcome === 'accepted' ? 'Answer recorded: a worker resumes the run.' : 'This answer was already applied.' }),
    onFailure: (error) => onDone({ tone: 'error', text: error.message }),
    invalidate: () => [intentKeys.detail(id)],
  });
  const noRights = canAnswer ? undefined : 'Needs the operator role';
  const sendJson = () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return setMessage({ tone: 'error', text: 'The answer must be a JSON object.' });
    answer.mutate(parsed as JsonObject);
  };
  return (
    <section className={own.wait} aria-label="Waiting for an answer" data-testid="pipeline-wait">
      <div className={own.head}>
        <span className={`${styles.badge} ${styles.badgeWait}`}>waiting</span>
        <strong>
          Bridge <span className={styles.mono}>{wait.bridge}</span> waits for “{wait.name}”
        </strong>
      </div>
      {wait.prompt && <p className={own.prompt}>{wait.prompt}</p>}
      <p className={styles.hint}>
        Until <time dateTime={wait.deadline}>{formatUtc(wait.deadline)}</time>; then {RULE[wait.onTimeout]}. No worker is held meanwhile.
      </p>
      {wait.answerSchema && (
        <details className={own.shape}>
          <summary>What an answer must look like</summary>
          <pre>{JSON.stringify(withoutDialect(wait.answerSchema), null, 2)}</pre>
        </details>
      )}
      {message && (
        <div role="status" className={`${styles.banner} ${message.tone === 'ok' ? styles.bannerOk : styles.bannerError}`}>
          {message.text}
        </div>
      )}
      {wait.name === 'approval' ? (
        <ApprovalForm id={id} canAnswer={canAnswer} pending={answer.isPending} onAnswer={(body) => answer.mutate(body)} />
      ) : (
        <div className={own.form}>
          <label className={styles.formField}>
            Answer (a JSON object)
            <textarea value={body} onChange={(e) => setBody(e.target.value)} disabled={!canAnswer || answer.isPending} spellCheck={false} />
          </label>
          <button type="button" className="btn btn-sm btn-primary" disabled={!canAnswer || answer.isPending} title={noRights} onClick={sendJson}>
            Send answer
          </button>
        </div>
      )}
    </section>
  );
}

/**
 * Approve or reject. Approving lets the run go on, with an optional note. Rejecting fails the intent, so it asks
 * first and wants the note, which becomes the intent's failure reason ("Rejected by <you>: <note>") and the audit's.
 */
function ApprovalForm({ id, canAnswer, pending, onAnswer }: { id: string; canAnswer: boolean; pending: boolean; onAnswer: (body: JsonObject) => void }) {
  const [note, setNote] = useState('');
  const [rejecting, setRejecting] = useState(false);
  const noRights = canAnswer ? undefined : 'Needs the operator role';
  const withNote = (approved: boolean): JsonObject => (note.trim() ? { approved, note: note.trim() } : { approved });
  return (
    <div className={own.form}>
      <label className={styles.formField}>
        Note (optional to approve, needed to reject)
        <input type="text" value={note} maxLength={500} onChange={(e) => setNote(e.target.value)} disabled={!canAnswer || pending} />
      </label>
      <div className={styles.actions}>
        <button type="button" className="btn btn-sm btn-primary" disabled={!canAnswer || pending} title={noRights} onClick={() => onAnswer(withNote(true))}>
          Approve
        </button>
        <button type="button" className="btn btn-sm btn-danger" disabled={!canAnswer || pending} title={noRights} onClick={() => setRejecting(true)}>
          Reject…
        </button>
      </div>
      <ConfirmDialog
        open={rejecting}
        title={`Reject intent ${id.slice(0, 8)}?`}
        confirmLabel="Reject and fail the intent"
        pending={pending}
        confirmDisabled={note.trim().length === 0}
        onConfirm={() => {
          setRejecting(false);
          onAnswer(withNote(false));
        }}
        onCancel={() => setRejecting(false)}
      >
        <p>The run stops at the approval and the intent becomes FAILED, with your note as the reason. An operator can rerun it from a step later.</p>
        <label className={styles.formField}>
          Why (required)
          <input type="text" value={note} maxLength={500} onChange={(e) => setNote(e.target.value)} placeholder="e.g. amount does not match the signed order" />
        </label>
      </ConfirmDialog>
    </div>
  );
}
