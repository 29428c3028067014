'use client';

import { useState } from 'react';
import { setReplayBaselineAction } from '@/app/actions/replay';
import styles from '@/components/locks/console.module.css';
import { replayKeys } from '@/lib/console/replay-client';
import { useActionMutation } from '@/lib/console/use-action-mutation';
import type { ReplayRunView } from '@/lib/replay/types';
import { when } from './format';
import r from './replay.module.css';

/**
 * Pin a finished run as the baseline later runs are compared with, or unpin it. The same command as
 * `POST /api/replay/runs/{id}/baseline`: `replay.run`, audited with the note.
 */
export function BaselinePin({ run, canPin }: { run: ReplayRunView; canPin: boolean }) {
  const [note, setNote] = useState('');
  const [error, setError] = useState<string | null>(null);
  const pin = useActionMutation({
    action: setReplayBaselineAction,
    onOk: () => {
      setError(null);
      setNote('');
    },
    onFailure: (failure) => setError(failure.message),
    // The run list (its baseline tag) and every comparison change with the pin.
    invalidate: () => [replayKeys.all],
  });
  const pinned = run.pinnedAt !== null;
  if (!pinned && (run.status !== 'finished' || !canPin)) return null;
  return (
    <div className={r.pinRow} data-testid="run-baseline">
      {pinned && (
        <span className={r.baselineTag} title={`Pinned by ${run.pinnedBy} at ${when(run.pinnedAt!)}${run.pinNote ? `: ${run.pinNote}` : ''}`}>
          pinned baseline
        </span>
      )}
      {canPin && !pinned && (
        <input aria-label="Why this run is the baseline (optional)" placeholder="note (optional)" value={note} maxLength={200} onChange={(e) => setNote(e.target.value)} size={22} />
      )}
      {canPin && (
        <button
          type="button"
          className="btn btn-sm"
          disabled={pin.isPending}
          data-testid={pinned ? 'replay-unpin' : 'replay-pin'}
          onClick={() => pin.mutate(pinned ? { id: run.id, pinned: false } : { id: run.id, pinned: true, ...(note.trim() ? { note: note.trim() } : {}) })}
        >
          {pin.isPending ? 'Saving…' : pinned ? 'Unpin baseline' : 'Pin as baseline'}
        </button>
      )}
      {error && (
        <span className={`${styles.banner} ${styles.bannerError}`} role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
