'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import styles from './shell.module.css';

type NavItem = { href: string; label: string; icon: string; coming?: boolean };

/** The console's sections. Workers arrives with the pipeline issue (brief §8): shown, but not a link yet. */
export const NAV_ITEMS: NavItem[] = [
  { href: '/intents', label: 'Intents', icon: '▤' },
  { href: '/locks', label: 'Locks', icon: '⛓' },
  { href: '/contention', label: 'Contention', icon: '◔' },
  { href: '/replay', label: 'Replay', icon: '↻' },
  { href: '/workers', label: 'Workers', icon: '⚙', coming: true },
];

export function NavLinks() {
  const pathname = usePathname() ?? '/';
  return (
    <ul className={styles.navList}>
      {NAV_ITEMS.map((item) => {
        const active = pathname === item.href || pathname.startsWith(`${item.href}/`);
        if (item.coming) {
          return (
            <li key={item.href}>
              <span className={`${styles.navLink} ${styles.navComing}`} aria-disabled="true" title={`${item.label}: coming with the pipeline and workers`}>
                <span className={styles.navIcon} aria-hidden="true">
                  {item.icon}
                </span>
                {item.label}
                <span className={styles.comingTag}>coming</span>
              </span>
            </li>
          );
        }
        return (
          <li key={item.href}>
            <Link href={item.href} className={`${styles.navLink} ${active ? styles.navActive : ''}`} aria-current={active ? 'page' : undefined}>
              <span className={styles.navIcon} aria-hidden="true">
                {item.icon}
              </span>
              {item.label}
            </Link>
          </li>
        );
      })}
    </ul>
  );
}
