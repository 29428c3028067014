import Link from 'next/link';
import type { ComponentProps } from 'react';
import Markdown, { type Components, type ExtraProps } from 'react-markdown';
import rehypeSlug from 'rehype-slug';
import remarkGfm from 'remark-gfm';
import { docLinkTarget, type ServedDoc } from '@/lib/console/docs';
import styles from './doc.module.css';

/**
 * One of the repository's docs, rendered on the server. react-markdown builds React elements (no HTML string, and
 * HTML inside the markdown is shown as text, not run); remark-gfm reads GitHub's tables; rehype-slug gives headings
 * GitHub's ids, so the doc's own `#section` links work. Links are resolved as the repository would resolve them: to
 * a served doc's page, or as plain text for docs the console does not serve.
 */
export function MarkdownDoc({ source, file }: { source: string; file: ServedDoc }) {
  const components: Components = {
    a: ({ node: _node, href, children, ...rest }: ComponentProps<'a'> & ExtraProps) => {
      const target = docLinkTarget(href ?? '', file);
      if (target.kind === 'text') return <span className={styles.unlinked}>{children}</span>;
      if (target.kind === 'external') {
        return (
          <a {...rest} href={target.href} rel="noreferrer">
            {children}
          </a>
        );
      }
      return target.href.startsWith('#') ? (
        <a {...rest} href={target.href}>
          {children}
        </a>
      ) : (
        <Link href={target.href}>{children}</Link>
      );
    },
    // Wide tables scroll inside the page instead of widening it.
    table: ({ node: _node, ...rest }: ComponentProps<'table'> & ExtraProps) => (
      <div className={styles.tableScroll}>
        <table {...rest} />
      </div>
    ),
  };
  return (
    <article className={styles.doc}>
      <Markdown remarkPlugins={[remarkGfm]} rehypePlugins={[rehypeSlug]} components={components}>
        {source}
      </Markdown>
    </article>
  );
}
