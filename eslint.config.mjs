import nextVitals from 'eslint-config-next/core-web-vitals';
import nextTs from 'eslint-config-next/typescript';

const config = [
  ...nextVitals,
  ...nextTs,
  { ignores: ['.next/**', 'generated/**', 'node_modules/**', '.data/**', 'test-results/**', 'playwright-report/**', 'next-env.d.ts'] },
  { rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }] } },
  // A component or script function that does not fit on a screen does several things: split it into sections,
  // hooks and helpers, each about one thing. Blank lines and comments do not count; JSX does.
  {
    files: ['components/**/*.{ts,tsx}', 'scripts/**/*.{ts,tsx,mjs}'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  // Browser tests hold no React: the hooks rule takes Playwright helpers named use… (useSessionOf) for hooks.
  { files: ['e2e/**/*.ts'], rules: { 'react-hooks/rules-of-hooks': 'off' } },
  // A spec's pages wait for hydration on every goto only with the console's `test` (e2e/support/test.ts).
  {
    files: ['e2e/**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: '@playwright/test', message: "Import from './support/test': its pages wait until the console has hydrated." }] },
      ],
    },
  },
];

export default config;
