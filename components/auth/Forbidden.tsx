import styles from './auth.module.css';

/** What a signed-in user sees on a page their roles do not open. */
export function Forbidden({ permission }: { permission: string }) {
  return (
    <main className={styles.page}>
      <h1>Not allowed</h1>
      <p role="alert">
        Your roles do not open this page (it needs the <code>{permission}</code> permission). Ask an administrator if you need it.
      </p>
    </main>
  );
}
