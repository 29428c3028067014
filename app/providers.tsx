'use client';

import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { LiveProvider } from '@/components/live/LiveProvider';

function makeQueryClient() {
  return new QueryClient({
    defaultOptions: {
      queries: {
        // Server-prefetched data is fresh on arrival; the live feed says when it is not any more.
        staleTime: 30_000,
        refetchOnWindowFocus: false,
        retry: 1,
      },
    },
  });
}

/** Client-side context for every page: one QueryClient per browser tab, and the live feed when signed in. */
export function Providers({ live, children }: { live: boolean; children: ReactNode }) {
  const [queryClient] = useState(makeQueryClient);
  return (
    <QueryClientProvider client={queryClient}>
      <LiveProvider enabled={live}>{children}</LiveProvider>
    </QueryClientProvider>
  );
}
