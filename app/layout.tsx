import { cookies } from 'next/headers';
import type { ReactNode } from 'react';
import { ConsoleShell } from '@/components/shell/ConsoleShell';
import { HydrationMark } from '@/components/shell/HydrationMark';
import { currentUser } from '@/lib/auth/server';
import { parseTheme, THEME_COOKIE } from '@/lib/console/theme';
import { env } from '@/lib/env';
import { Providers } from './providers';
import './globals.css';

export const metadata = { title: 'Bridge Console' };

export default async function RootLayout({ children }: { children: ReactNode }) {
  const theme = parseTheme((await cookies()).get(THEME_COOKIE)?.value);
  const user = await currentUser().catch(() => null);
  return (
    <html lang="en" data-theme={theme}>
      <body>
        <HydrationMark />
        <Providers live={Boolean(user && !user.mustChangePassword)}>
          <ConsoleShell env={env().BRIDGE_ENV} theme={theme} signedIn={Boolean(user)}>
            {children}
          </ConsoleShell>
        </Providers>
      </body>
    </html>
  );
}
