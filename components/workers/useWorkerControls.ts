'use client';

import { useState } from 'react';
import { cancelRetryAction, retryNowAction, setWorkersPausedAction } from '@/app/actions/workers';
import type { ActionResult } from '@/lib/console/action-result';
import { shortId } from '@/lib/console/ids';
import { workerKeys } from '@/lib/console/workers-client';
import { useActionMutation } from '@/lib/console/use-action-mutation';

/** The operator's control waiting for confirmation: pause or resume claiming, or retry now / cancel one intent's retry. */
export type Pending = { kind: 'pause' | 'resume' } | { kind: 'retry-now' | 'cancel'; intentId: string } | null;
type Control = Exclude<Pending, null>;

function runControl(p: Control): Promise<ActionResult<unknown>> {
  if (!('intentId' in p)) return setWorkersPausedAction({ paused: p.kind === 'pause' });
  return p.kind === 'retry-now' ? retryNowAction({ intentId: p.intentId }) : cancelRetryAction({ intentId: p.intentId });
}

/** What to say once a control is done; a pause is confirmed by the paused banner itself (who paused, since when), not by a second one saying the same. */
function doneMessage(p: Control): string | null {
  const intent = 'intentId' in p ? p.intentId : '';
  return { pause: null, resume: 'Claiming resumed.', 'retry-now': `Intent ${shortId(intent)} is due now.`, cancel: `The retry of ${shortId(intent)} is cancelled.` }[p.kind];
}

/** The Workers page's controls: ask (`pending`), confirm, and the outcome said in a banner; the overview is re-read after. */
export function useWorkerControls() {
  const [pending, setPending] = useState<Pending>(null);
  const [message, setMessage] = useState<{ tone: 'ok' | 'error'; text: string } | null>(null);
  const mutation = useActionMutation({
    action: runControl,
    onOk: (_data, p) => {
      const done = doneMessage(p);
      setMessage(done ? { tone: 'ok', text: done } : null);
    },
    onFailure: (error) => setMessage({ tone: 'error', text: error.message }),
    onSettled: () => setPending(null),
    invalidate: () => [workerKeys.all],
  });
  const confirm = () => {
    if (pending) mutation.mutate(pending);
  };
  return { pending, setPending, message, busy: mutation.isPending, confirm };
}
