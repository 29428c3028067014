import Link from 'next/link';
import type { ReactNode } from 'react';
import { UserMenu } from '@/components/auth/UserMenu';
import type { Theme } from '@/lib/console/theme';
import { EnvBadge, type BridgeEnv } from './EnvBadge';
import { NavLinks } from './NavLinks';
import { ThemeToggle } from './ThemeToggle';
import styles from './shell.module.css';

const ENV_NOTE: Record<BridgeEnv, string> = {
  development: 'Development data — safe to experiment',
  staging: 'Staging — contention replay allowed before rollouts',
  production: 'Production — changes are real',
};

/**
 * The console frame around every page: skip link, sidebar navigation, the environment badge (always visible;
 * production adds a red band across the top), the theme switch and the signed-in user.
 */
export function ConsoleShell({ env, theme, signedIn, children }: { env: BridgeEnv; theme: Theme; signedIn: boolean; children: ReactNode }) {
  return (
    <div className={`${styles.shell} ${styles[`shell_${env}`]}`}>
      <a href="#main" className={styles.skipLink}>
        Skip to content
      </a>
      <noscript>
        <p className={styles.noScript} role="alert">
          This console needs JavaScript: its lists, live updates and most of its actions run in the browser. Signing in, your password and your API
          tokens work without it; turn JavaScript on for the rest.
        </p>
      </noscript>
      {env === 'production' && (
        <section className={styles.prodBand} aria-label="Environment">
          Production — every action here changes live intents
        </section>
      )}
      <div className={styles.frame}>
        <aside className={styles.sidebar}>
          <div className={styles.brand}>
            <Link href="/intents" className={styles.brandLink}>
              <span className={styles.logo} aria-hidden="true">
                ◆
              </span>
              Bridge Console
            </Link>
            <EnvBadge env={env} />
          </div>
          <nav aria-label="Main" className={styles.nav}>
            <NavLinks signedIn={signedIn} />
          </nav>
          <div className={styles.sidebarFoot}>
            <ThemeToggle initial={theme} />
          </div>
        </aside>
        <div className={styles.content}>
          <header className={styles.topbar}>
            <p className={styles.topbarNote}>{ENV_NOTE[env]}</p>
            <div className={styles.userArea}>
              <UserMenu />
            </div>
          </header>
          <main id="main" tabIndex={-1} className={styles.main}>
            {children}
          </main>
        </div>
      </div>
    </div>
  );
}
