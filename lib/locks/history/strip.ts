import type { EpisodeTree } from './fold';

/**
 * Pure view-model helpers for the Locks page's history: where each episode sits on the time strip, and which tree
 * was in force at a scrubbed moment. No React, no fetching.
 */

export type StripEpisode = { id: string; startedAt: string; endedAt: string | null; lastSeenAt: string; peakWaiters: number };
export type StripBar = { id: string; x: number; width: number; lane: number; peakWaiters: number };

/** Bars on [0, 1] of the window, each in the first lane where it overlaps nothing; at least `minWidth` wide. */
export function layoutStrip(episodes: readonly StripEpisode[], from: number, to: number, minWidth = 0.006): { bars: StripBar[]; lanes: number } {
  const span = Math.max(1, to - from);
  const laneEnds: number[] = [];
  const bars = [...episodes]
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.id.localeCompare(b.id))
    .map((e) => {
      const start = Math.max(from, new Date(e.startedAt).getTime());
      const end = Math.min(to, new Date(e.endedAt ?? e.lastSeenAt).getTime());
      const x = (start - from) / span;
      const width = Math.max(minWidth, (end - start) / span);
      let lane = laneEnds.findIndex((last) => last <= x);
      if (lane === -1) lane = laneEnds.push(0) - 1;
      laneEnds[lane] = x + width;
      return { id: e.id, x, width, lane, peakWaiters: e.peakWaiters };
    });
  return { bars, lanes: Math.max(1, laneEnds.length) };
}

/** Whether the episode was going on at `at` (ms): from its start to its end, or to its last sample while it lasts. */
export function coversMoment(e: StripEpisode, at: number): boolean {
  return new Date(e.startedAt).getTime() <= at && at <= new Date(e.endedAt ?? e.lastSeenAt).getTime();
}

/** The tree as it was at `at`: the last sample taken at or before it (the first one when `at` precedes them all). */
export function treeAt<S extends { at: string; tree: EpisodeTree }>(samples: readonly S[], at: number): S | null {
  let found: S | null = samples[0] ?? null;
  for (const s of samples) {
    if (new Date(s.at).getTime() <= at) found = s;
    else break;
  }
  return found;
}

/** Colour step for a bar by its peak waiters: 1, 2–4, 5–19, 20 and more. */
export function waiterLevel(peakWaiters: number): 0 | 1 | 2 | 3 {
  return peakWaiters >= 20 ? 3 : peakWaiters >= 5 ? 2 : peakWaiters >= 2 ? 1 : 0;
}
