import { z } from 'zod';

/** The console's colour theme, kept in a cookie so the server renders the right one (no flash on load). */
export const THEME_COOKIE = 'bc_theme';
export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

export function parseTheme(value: string | undefined): Theme {
  return z.enum(THEMES).catch('system').parse(value);
}
