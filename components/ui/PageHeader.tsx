import type { ReactNode } from 'react';
import styles from './ui.module.css';

/** A page's title row: heading, a line of context, and controls (live indicator, refresh, actions) on the right. */
export function PageHeader({ title, description, actions, breadcrumb }: { title: ReactNode; description?: ReactNode; actions?: ReactNode; breadcrumb?: ReactNode }) {
  return (
    <header className={styles.pageHeader}>
      <div className={styles.pageHeaderText}>
        {breadcrumb && <nav aria-label="Breadcrumb" className={styles.breadcrumb}>{breadcrumb}</nav>}
        <h1 className={styles.pageTitle}>{title}</h1>
        {description && <p className={styles.pageDescription}>{description}</p>}
      </div>
      {actions && <div className={styles.pageActions}>{actions}</div>}
    </header>
  );
}

/** A bordered section with a heading, for page panels. */
export function Panel({ title, actions, children, id, className }: { title: ReactNode; actions?: ReactNode; children: ReactNode; id?: string; className?: string }) {
  const headingId = id ? `${id}-heading` : undefined;
  return (
    <section className={`${styles.panel} ${className ?? ''}`} aria-labelledby={headingId} id={id}>
      <div className={styles.panelHead}>
        <h2 className={styles.panelTitle} id={headingId}>
          {title}
        </h2>
        {actions && <div className={styles.panelActions}>{actions}</div>}
      </div>
      <div className={styles.panelBody}>{children}</div>
    </section>
  );
}
