'use client';

import styles from './ui.module.css';

/** A panel that failed to load: what happened, in words, and a way to try again. */
export function ErrorState({ title = 'This could not be loaded', error, onRetry, retrying }: { title?: string; error: unknown; onRetry?: () => void; retrying?: boolean }) {
  return (
    <div className={styles.errorState} role="alert">
      <div>
        <strong>{title}</strong>
        <p>{errorMessage(error)}</p>
      </div>
      {onRetry && (
        <button type="button" className="btn btn-sm" onClick={onRetry} disabled={retrying}>
          {retrying ? 'Retrying…' : 'Try again'}
        </button>
      )}
    </div>
  );
}

/** Messages people understand: the API's own message when there is one, else a plain description. */
export function errorMessage(error: unknown): string {
  if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string' && error.message) {
    if (error.message === 'Failed to fetch' || error.message.startsWith('NetworkError')) return 'The console could not reach its server. Check your connection and try again.';
    return error.message;
  }
  return 'Something went wrong. Try again; if it keeps happening, tell the on-call engineer.';
}
