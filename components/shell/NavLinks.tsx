'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import styles from './shell.module.css';

/** `short`: the words shown in the bar across the top of a narrow window, where the full label would not fit. */
type NavItem = { href: string; label: string; short?: string; icon: keyof typeof ICONS; coming?: boolean; reference?: boolean };

/** 16px line icons (decorative: the label names the section). */
const ICONS = {
  list: 'M3 4h10M3 8h10M3 12h10',
  lock: 'M4.5 7V5a3.5 3.5 0 0 1 7 0v2M3.5 7h9v6.5h-9z',
  chart: 'M2.5 13.5h11M4.5 11V8M8 11V4M11.5 11V6.5',
  replay: 'M3 8a5 5 0 1 0 1.5-3.5M3 2.5v3h3',
  events: 'M2.5 8h8M8 4.5 11.5 8 8 11.5M13.5 3v10',
  audit: 'M4 2.5h6l2.5 2.5v8.5h-8.5zM6 7h4.5M6 9.5h4.5M6 12h3',
  api: 'M5.5 4.5 2 8l3.5 3.5M10.5 4.5 14 8l-3.5 3.5M9 3 7 13',
  book: 'M2.5 3.5h4a1.5 1.5 0 0 1 1.5 1.5v8a1.5 1.5 0 0 0-1.5-1.5h-4zM13.5 3.5h-4A1.5 1.5 0 0 0 8 5v8a1.5 1.5 0 0 1 1.5-1.5h4z',
  workers: 'M8 5.5a2.5 2.5 0 1 0 0 5 2.5 2.5 0 0 0 0-5zM8 1.5v2M8 12.5v2M1.5 8h2M12.5 8h2M3.4 3.4l1.4 1.4M11.2 11.2l1.4 1.4M3.4 12.6l1.4-1.4M11.2 4.8l1.4-1.4',
} as const;

function Icon({ name }: { name: keyof typeof ICONS }) {
  return (
    <svg width="16" height="16" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" strokeLinejoin="round" aria-hidden="true">
      <path d={ICONS[name]} />
    </svg>
  );
}

/**
 * The console's sections, then the references for those who call it (marked `reference`: set apart at the end).
 * An item marked `coming` is shown but not yet a link.
 */
export const NAV_ITEMS: NavItem[] = [
  { href: '/intents', label: 'Intents', icon: 'list' },
  { href: '/locks', label: 'Locks', icon: 'lock' },
  { href: '/contention', label: 'Contention', icon: 'chart' },
  { href: '/replay', label: 'Replay', icon: 'replay' },
  { href: '/events', label: 'Events', icon: 'events' },
  { href: '/audit', label: 'Audit', icon: 'audit' },
  { href: '/workers', label: 'Workers', icon: 'workers' },
  { href: '/api-docs', label: 'API reference', short: 'API docs', icon: 'api', reference: true },
  { href: '/docs/events', label: 'Events reference', short: 'Event docs', icon: 'book', reference: true },
];

/**
 * Signed out, only the references are listed: they are open to anyone, and every other section would only lead
 * back to the sign-in page.
 */
export function NavLinks({ signedIn }: { signedIn: boolean }) {
  const pathname = usePathname() ?? '/';
  const items = signedIn ? NAV_ITEMS : NAV_ITEMS.filter((item) => item.reference);
  return (
    <ul className={styles.navList}>
      {items.map((item, i) => {
        const firstReference = signedIn && item.reference && !items[i - 1]?.reference;
        const active = pathname === item.href || pathname.startsWith(`${item.href}/`);
        if (item.coming) {
          return (
            <li key={item.href}>
              <span className={`${styles.navLink} ${styles.navComing}`} aria-disabled="true" title={`${item.label}: coming with the pipeline and workers`}>
                <span className={styles.navIcon}>
                  <Icon name={item.icon} />
                </span>
                {item.label}
                <span className={styles.comingTag}>coming</span>
              </span>
            </li>
          );
        }
        return (
          <li key={item.href} className={firstReference ? styles.navReference : undefined}>
            <Link
              href={item.href}
              className={`${styles.navLink} ${active ? styles.navActive : ''}`}
              aria-current={active ? 'page' : undefined}
              aria-label={item.short ? item.label : undefined}
              title={item.short ? item.label : undefined}
            >
              <span className={styles.navIcon}>
                <Icon name={item.icon} />
              </span>
              {item.short ? (
                <>
                  <span className={styles.navLabelLong}>{item.label}</span>
                  <span className={styles.navLabelShort}>{item.short}</span>
                </>
              ) : (
                item.label
              )}
            </Link>
          </li>
        );
      })}
    </ul>
  );
}
