'use client';

import { useEffect, useId, useRef, type ReactNode } from 'react';
import styles from './ui.module.css';

/**
 * Asks before a destructive action and says what it will do. A native modal <dialog>: focus moves into it and is
 * kept there, Escape cancels, and the safe choice (Cancel) has the focus first.
 */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  tone = 'danger',
  pending = false,
  confirmDisabled = false,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  tone?: 'danger' | 'primary';
  pending?: boolean;
  /** The confirm button stays disabled (e.g. until a required reason is given). */
  confirmDisabled?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useModalDialog(open);
  const titleId = useId();
  const bodyId = useId();

  return (
    <dialog
      ref={ref}
      className={styles.dialog}
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onCancel={(e) => {
        e.preventDefault();
        if (!pending) onCancel();
      }}
    >
      {open && (
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault();
            if (!pending && !confirmDisabled) onConfirm();
          }}
        >
          <h2 id={titleId} className={styles.dialogTitle}>
            {title}
          </h2>
          <div id={bodyId} className={styles.dialogBody}>
            {children}
          </div>
          <div className={styles.dialogActions}>
            <button type="button" className="btn" onClick={onCancel} disabled={pending} autoFocus>
              Cancel
            </button>
            <button type="submit" className={`btn ${tone === 'danger' ? 'btn-danger' : 'btn-primary'}`} disabled={pending || confirmDisabled}>
              {pending ? 'Working…' : confirmLabel}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}

/**
 * A native modal <dialog> shown while `open`. Focus goes back to what had it when the dialog opened, also when the
 * dialog is removed while open (the browser restores it only on close()): otherwise it falls to the page's body and
 * a keyboard user starts again from the top.
 */
function useModalDialog(open: boolean) {
  const ref = useRef<HTMLDialogElement>(null);
  const openedFrom = useRef<HTMLElement | null>(null);
  const giveFocusBack = () => {
    const before = openedFrom.current;
    openedFrom.current = null;
    if (before?.isConnected) before.focus();
  };
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      openedFrom.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      dialog.showModal();
    }
    if (!open && dialog.open) {
      dialog.close();
      giveFocusBack();
    }
  }, [open]);
  // Removed while open: after the dialog has left the page, when the rest of it can take focus again.
  useEffect(() => giveFocusBack, []);
  return ref;
}
