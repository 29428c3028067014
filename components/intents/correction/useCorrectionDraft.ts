'use client';

import { useEffect, useRef, useState } from 'react';
import { clearDraft, loadDraft, saveDraft } from '@/lib/console/correction-draft';
import { newIdempotencyKey } from '@/lib/console/ids';
import type { JsonRecord } from '@/lib/console/json-diff';
import type { IntentWithCorrections } from '@/lib/shared/intent-types';
import { EMPTY_DIFF, type Conflict, type Draft } from './types';

/**
 * The correction in progress, opened at the intent's current version with a fresh idempotency key. The draft and any
 * conflict survive a reload: restored once after mount (sessionStorage is the browser's, so not during the server
 * render), then saved on every change, and cleared when there is nothing left to keep.
 */
export function useCorrectionDraft(intent: IntentWithCorrections) {
  const [draft, setDraft] = useState<Draft>(() => ({
    mode: 'fields',
    edits: [],
    text: EMPTY_DIFF,
    reason: '',
    source: 'console',
    key: newIdempotencyKey('correction'),
    opened: { version: intent.version, payload: intent.payload as JsonRecord },
    conflict: null,
  }));
  const restored = useRef(false);
  const intentId = intent.id;

  // A form with nothing in it yet follows the intent as it changes (the operator's own status change on this page,
  // or anyone's): there is no edit that a change could conflict with, so a correction started now is checked against
  // the version it was started on, not the one the page first showed. Once something is typed, the form keeps its
  // version and a change that gets in meanwhile is a conflict to decide on. Adjusted during render, as React
  // recommends for state that follows a prop.
  const [followed, setFollowed] = useState(intent.version);
  if (followed !== intent.version) {
    setFollowed(intent.version);
    if (isBlank(draft) && draft.opened.version < intent.version) setDraft((d) => ({ ...d, opened: { version: intent.version, payload: intent.payload as JsonRecord } }));
  }

  useEffect(() => {
    const stored = loadDraft(intentId);
    restored.current = true;
    if (!stored) return;
    // Restoring browser-only state after hydration is what an effect is for here: reading sessionStorage during
    // render would make the server's and the browser's first render differ.
    // eslint-disable-next-line react-hooks/set-state-in-effect
    setDraft((d) => ({ ...stored, opened: { version: stored.opened.version, payload: stored.opened.payload as JsonRecord }, conflict: (stored.conflict as unknown as Conflict | null) ?? d.conflict }));
  }, [intentId]);

  useEffect(() => {
    if (!restored.current) return;
    if (isBlank(draft)) clearDraft(intentId);
    else saveDraft(intentId, draft);
  }, [intentId, draft]);

  const update = (patch: Partial<Draft> | ((d: Draft) => Partial<Draft>)) => setDraft((d) => ({ ...d, ...(typeof patch === 'function' ? patch(d) : patch) }));
  return [draft, update] as const;
}

/** Nothing worth keeping: no conflict, no reason, and nothing typed in the editor in use. */
function isBlank(draft: Draft): boolean {
  const edited = draft.mode === 'fields' ? draft.edits.length > 0 : draft.text !== EMPTY_DIFF;
  return !draft.conflict && !edited && !draft.reason.trim();
}
