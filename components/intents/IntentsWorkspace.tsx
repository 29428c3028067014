'use client';

import { createContext, useContext, useMemo, useState, type ReactNode } from 'react';
import { useLivePause } from '@/components/live/LiveProvider';
import { LiveIndicator } from '@/components/ui/LiveIndicator';
import { LIVE_OPTIONS, RefreshControl, type RefreshMode } from '@/components/ui/RefreshControl';
import { intentKeys } from '@/lib/intents/keys';

/**
 * State the Intents page's panels share: the refresh mode (live or paused) and how many rows are selected. Live
 * refresh of the list pauses while anything is selected, so a selection never jumps; counts keep updating.
 */
type Workspace = { mode: RefreshMode; setMode: (m: RefreshMode) => void; selectedCount: number; setSelectedCount: (n: number) => void; listPaused: boolean };

const WorkspaceContext = createContext<Workspace | null>(null);

export function IntentsWorkspace({ children }: { children: ReactNode }) {
  const [mode, setMode] = useState<RefreshMode>('live');
  const [selectedCount, setSelectedCount] = useState(0);
  const listPaused = mode === 'paused' || selectedCount > 0;
  const value = useMemo(() => ({ mode, setMode, selectedCount, setSelectedCount, listPaused }), [mode, selectedCount, listPaused]);
  return <WorkspaceContext.Provider value={value}>{children}</WorkspaceContext.Provider>;
}

export function useIntentsWorkspace(): Workspace {
  const ctx = useContext(WorkspaceContext);
  if (!ctx) throw new Error('useIntentsWorkspace needs <IntentsWorkspace>');
  return ctx;
}

/** The header's live indicator and refresh control. */
export function IntentsLiveControls() {
  const { mode, setMode, selectedCount, listPaused } = useIntentsWorkspace();
  const pending = useLivePause('intents-list', intentKeys.lists(), listPaused);
  const reason =
    mode === 'paused' ? 'Live refresh is paused: choose Live to resume' : `Paused while ${selectedCount} row${selectedCount === 1 ? ' is' : 's are'} selected, so the selection does not move`;
  return (
    <>
      <LiveIndicator paused={listPaused} pausedReason={reason} pending={pending} />
      {/* The selection pauses the list whatever the mode: the control says so rather than "Live". */}
      <RefreshControl value={mode} onChange={setMode} options={LIVE_OPTIONS} heldBy={mode === 'live' && selectedCount > 0 ? 'Paused while rows are selected' : undefined} />
    </>
  );
}
