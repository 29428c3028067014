import { describe, expect, it } from 'vitest';
import { docLinkTarget, readServedDoc, SERVED_DOCS } from './docs';

describe('links in a served doc', () => {
  it('keeps anchors, console paths and other sites as links', () => {
    expect(docLinkTarget('#streams-and-environments', 'EVENTS.md')).toEqual({ kind: 'console', href: '#streams-and-environments' });
    expect(docLinkTarget('/api-docs', 'EVENTS.md')).toEqual({ kind: 'console', href: '/api-docs' });
    expect(docLinkTarget('https://docs.nats.io/', 'EVENTS.md')).toEqual({ kind: 'external', href: 'https://docs.nats.io/' });
  });

  it('sends a link to a served doc to its page, anchor kept', () => {
    expect(docLinkTarget('EVENTS.md', 'EVENTS.md')).toEqual({ kind: 'console', href: '/docs/events' });
    expect(docLinkTarget('./EVENTS.md#delivery-guarantees', 'EVENTS.md')).toEqual({ kind: 'console', href: '/docs/events#delivery-guarantees' });
    expect(docLinkTarget('bench/../EVENTS.md', 'EVENTS.md')).toEqual({ kind: 'console', href: '/docs/events' });
  });

  it('shows a link to a doc the console does not serve as text, never as a link that would 404', () => {
    expect(docLinkTarget('bench/2026-11-24-relay.md', 'EVENTS.md')).toEqual({ kind: 'text' });
    expect(docLinkTarget('ARCHITECTURE.md#layers', 'EVENTS.md')).toEqual({ kind: 'text' });
    expect(docLinkTarget('../README.md', 'EVENTS.md')).toEqual({ kind: 'text' });
    expect(docLinkTarget('javascript:alert(1)', 'EVENTS.md')).toEqual({ kind: 'text' });
  });

  it('every served doc exists, and each of its links resolves to a link or to text', async () => {
    for (const file of Object.keys(SERVED_DOCS) as (keyof typeof SERVED_DOCS)[]) {
      const text = await readServedDoc(file);
      expect(text.length).toBeGreaterThan(100);
      for (const [, href] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = docLinkTarget(href, file);
        if (target.kind === 'console' && !target.href.startsWith('#')) expect([...Object.values(SERVED_DOCS).map((d) => d.href), '/api-docs']).toContain(target.href.split('#')[0]);
      }
    }
  });
});
