'use client';

import { useRef, useState } from 'react';
import { correctIntentAction } from '@/app/actions/intents';
import type { ActionResult } from '@/lib/console/action-result';
import { editsFromText, parseFieldEdits } from '@/lib/console/field-edits';
import { newIdempotencyKey } from '@/lib/console/ids';
import { formatJson, mergeDiff, parseDiffText, recordBefore, type JsonRecord } from '@/lib/console/json-diff';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import type { ChangesSince } from '@/lib/intents/changes-since';
import { intentKeys } from '@/lib/intents/keys';
import type { IntentWithCorrections, ReevaluateResult } from '@/lib/shared/intent-types';
import { EMPTY_DIFF, type Draft, type EditMode, type Outcome, type Submission } from './types';
import { useCorrectionDraft } from './useCorrectionDraft';

/** A second click racing the first gets "still in progress": wait for the first one's stored result. */
async function correctOnce(intentId: string, submission: Submission): Promise<ActionResult<ReevaluateResult>> {
  for (let attempt = 0; ; attempt++) {
    const result = await correctIntentAction({ id: intentId, ...submission });
    if (result.ok || result.error.code !== 'idempotency_in_progress' || attempt >= 20) return result;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A reviewer's correction: the draft, its submission (once at a time), and what came back — applied, refused, or a
 * version conflict to decide on (re-apply on the version it is at now, or discard).
 */
export function useCorrection(intent: IntentWithCorrections) {
  const [draft, update] = useCorrectionDraft(intent);
  const [touched, setTouched] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const inFlight = useRef(false);
  const parsed = draft.mode === 'fields' ? parseFieldEdits(draft.opened.payload, draft.edits) : parseDiffText(draft.text);
  const cleared = () => ({ conflict: null, text: EMPTY_DIFF, edits: [], reason: '', key: newIdempotencyKey('correction') });

  const mutation = useActionMutation({
    action: (submission: Submission) => correctOnce(intent.id, submission),
    onOk: (result, submission) => {
      setOutcome({ kind: 'ok', result });
      setTouched(false);
      // The form now edits the version this correction produced.
      update((d) => ({ ...cleared(), opened: { version: result.version, payload: mergeDiff(d.opened.payload, submission.diff) } }));
    },
    onFailure: (error, submission) => {
      const changes = error.code === 'version_conflict' ? (error.details as { changes?: ChangesSince } | undefined)?.changes : undefined;
      if (!changes) return setOutcome({ kind: 'error', error });
      update((d) => ({ conflict: { submission, base: d.opened.payload, changes, reviewText: formatJson(submission.diff) } }));
      setOutcome(null);
    },
    onSettled: () => {
      inFlight.current = false;
    },
    invalidate: () => [intentKeys.detail(intent.id), intentKeys.lists()],
  });

  const submit = (submission: Submission) => {
    if (inFlight.current) return;
    inFlight.current = true;
    // Sent as plain JSON, each value once: a diff built field by field shares objects with the payload its
    // before-values come from, and React encodes a repeated object as a reference to its first place, which the
    // server's screening of action bodies refuses.
    mutation.mutate(JSON.parse(JSON.stringify(submission)) as Submission);
  };

  const submitDraft = () => {
    setTouched(true);
    const { reason, source, opened, key } = draft;
    if (!parsed.ok || !reason.trim() || !source.trim()) return;
    submit({ diff: parsed.diff, reason: reason.trim(), source: source.trim(), expectedVersion: opened.version, idempotencyKey: key, metadata: { console: { before: recordBefore(opened.payload, parsed.diff) } } });
  };

  /** Applies the (possibly reworked) edit on the version the intent is at now: their changes stay, mine go on top. */
  const reapply = (diff: JsonRecord) => {
    if (!draft.conflict) return;
    const current = draft.conflict.changes.intent;
    const nextKey = newIdempotencyKey('correction');
    update({ key: nextKey, opened: { version: current.version, payload: current.payload as JsonRecord } });
    submit({ ...draft.conflict.submission, diff, expectedVersion: current.version, idempotencyKey: nextKey, metadata: { console: { before: recordBefore(current.payload as JsonRecord, diff) } } });
  };

  const discard = () => {
    if (!draft.conflict) return;
    const current = draft.conflict.changes.intent;
    setOutcome(null);
    setTouched(false);
    update({ ...cleared(), opened: { version: current.version, payload: current.payload as JsonRecord } });
  };

  /** Changes editor, carrying the correction over; refused (with what to fix) while it does not read in the other one. */
  const switchMode = (mode: EditMode): string | null => {
    const next = switchedDraft(draft, mode);
    if (typeof next === 'string') return next;
    update(next);
    return null;
  };

  return { draft, update, parsed, touched, setTouched, outcome, pending: mutation.isPending, submitDraft, reapply, discard, switchMode };
}

function switchedDraft(draft: Draft, mode: EditMode): Partial<Draft> | string {
  if (mode === draft.mode) return {};
  if (mode === 'json') {
    if (draft.edits.length === 0) return { mode, text: EMPTY_DIFF };
    const built = parseFieldEdits(draft.opened.payload, draft.edits);
    return built.ok ? { mode, text: formatJson(built.diff) } : `Fix the fields first: ${built.message}`;
  }
  const read = editsFromText(draft.opened.payload, draft.text);
  return read.ok ? { mode, edits: read.edits } : `Fix the JSON first: ${read.message}`;
}
