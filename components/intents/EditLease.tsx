'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import { currentEditLeaseAction, releaseEditLeaseAction, renewEditLeaseAction, takeEditLeaseAction } from '@/app/actions/leases';
import { formatUtcTime } from '@/components/ui/time';
import { releaseEditLeaseOnExit } from '@/lib/console/leases-client';
import { EDIT_LEASE_TTL_MS } from '@/lib/leases/edit-names';
import styles from './intents.module.css';

type Held = { owner: string; token: number; expiresAt: string };
/**
 * A lease this form does not hold: the name it is held under, the user who took it (the same, unless taken for them),
 * and whether it is the signed-in user's own, from another tab or window.
 */
type Other = { owner: string; actor?: string | null; expiresAt: string; mine: boolean };

const LOOK_EVERY_MS = 15_000;
const hhmm = (iso: string) => `${formatUtcTime(iso).slice(0, 5)} UTC`;

/**
 * The reviewer's edit lease on an intent: taken when they start working in the correction form (`take`, on the
 * form's first focus), renewed while the form stays open, released when it closes or the page goes away. While
 * someone else holds it the form says who and until when; it never blocks — the version check protects both.
 *
 * While a lease held elsewhere is known to be live, focusing the form does not ask again: each refused take is a
 * lease event on the intent's timeline, and one per focused field buried everything else. The look every
 * LOOK_EVERY_MS notices when it is given back, and the next focus takes it.
 */
export function useEditLease(intentId: string) {
  const [held, setHeld] = useState<Held | null>(null);
  const [other, setOther] = useState<Other | null>(null);
  const taking = useRef(false);
  const holding = useRef(false);

  // Who edits now, while it is not us.
  useEffect(() => {
    let stopped = false;
    const look = async () => {
      if (holding.current) return;
      const result = await currentEditLeaseAction({ intentId }).catch(() => null);
      if (!stopped && result?.ok) setOther(result.data);
    };
    void look();
    const timer = setInterval(look, LOOK_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [intentId]);

  const otherUntil = other ? Date.parse(other.expiresAt) : 0;
  const take = useCallback(async () => {
    if (taking.current || holding.current || otherUntil > Date.now()) return;
    taking.current = true;
    try {
      const result = await takeEditLeaseAction({ intentId });
      if (!result.ok) return;
      if (result.data.held) {
        holding.current = true;
        setHeld(result.data);
        setOther(null);
      } else {
        setOther({ owner: result.data.owner, expiresAt: result.data.expiresAt, mine: result.data.mine });
      }
    } finally {
      taking.current = false;
    }
  }, [intentId, otherUntil]);

  const token = held?.token;
  const owner = held?.owner;
  useEffect(() => {
    if (token === undefined || owner === undefined) return;
    const renew = setInterval(async () => {
      const result = await renewEditLeaseAction({ intentId, token }).catch(() => null);
      if (result?.ok) setHeld((h) => h && { ...h, expiresAt: result.data.expiresAt });
      else if (result && !result.ok) {
        holding.current = false;
        setHeld(null);
      }
    }, EDIT_LEASE_TTL_MS / 3);
    // On leaving the page a server action may not get out; a keepalive request does (lib/console/leases-client.ts).
    const releaseOnExit = () => releaseEditLeaseOnExit(intentId, owner, token);
    window.addEventListener('pagehide', releaseOnExit);
    return () => {
      clearInterval(renew);
      window.removeEventListener('pagehide', releaseOnExit);
      holding.current = false;
      void releaseEditLeaseAction({ intentId, token }).catch(() => undefined);
    };
  }, [intentId, token, owner]);

  return { held, other, take };
}

export function EditLeaseNotice({ held, other }: { held: Held | null; other: Other | null }) {
  if (held) {
    return (
      <p className="muted" data-testid="edit-lease" role="status">
        You are editing this intent: others see it until {hhmm(held.expiresAt)}, renewed while this form is open.
      </p>
    );
  }
  if (other?.mine) {
    return (
      <p className={styles.staleNote} data-testid="edit-lease" role="status">
        You are editing this intent in another tab or window (until {hhmm(other.expiresAt)}). A correction here still works: if the other one lands first, you
        will see what changed and decide.
      </p>
    );
  }
  if (other) {
    return (
      <p className={styles.staleNote} data-testid="edit-lease" role="status">
        Being edited by <strong>{other.owner}</strong>
        {other.actor && other.actor !== other.owner ? <> (lease taken by <strong data-testid="edit-lease-actor">{other.actor}</strong>)</> : null} until {hhmm(other.expiresAt)}. You can still apply a correction: if theirs lands first, you will see what changed and
        decide.
      </p>
    );
  }
  return null;
}
