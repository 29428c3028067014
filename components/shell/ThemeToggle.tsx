'use client';

import { useState } from 'react';
import { THEME_COOKIE, THEMES, type Theme } from '@/lib/console/theme';
import styles from './shell.module.css';

function applyTheme(theme: Theme) {
  document.documentElement.dataset.theme = theme;
  document.cookie = `${THEME_COOKIE}=${theme}; path=/; max-age=31536000; samesite=lax`;
}

const LABEL: Record<Theme, string> = { system: 'System', light: 'Light', dark: 'Dark' };

/** Light, dark or follow the system; remembered in a cookie for a year. */
export function ThemeToggle({ initial }: { initial: Theme }) {
  const [theme, setTheme] = useState<Theme>(initial);
  const choose = (next: Theme) => {
    setTheme(next);
    applyTheme(next);
  };
  return (
    <div className={styles.themeToggle} role="radiogroup" aria-label="Colour theme">
      {THEMES.map((t) => (
        <button key={t} type="button" role="radio" aria-checked={theme === t} className={theme === t ? styles.themeActive : undefined} onClick={() => choose(t)}>
          {LABEL[t]}
        </button>
      ))}
    </div>
  );
}
