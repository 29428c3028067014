'use client';

import { useEffect, useRef, useState } from 'react';
import './swagger-theme.css';

type ReactLike = { createElement: (type: unknown, props: Record<string, unknown>) => unknown };
type SwaggerSystem = { React: ReactLike };
type SwaggerPlugin = (system: SwaggerSystem) => { wrapComponents?: Record<string, (Original: unknown, system: SwaggerSystem) => (props: Record<string, unknown>) => unknown> };
type SwaggerUiBundle = (options: {
  url: string;
  domNode: HTMLElement;
  deepLinking?: boolean;
  syntaxHighlight?: boolean;
  plugins?: SwaggerPlugin[];
}) => unknown;

const ASSETS = '/api-docs/assets';

/** Loads Swagger UI from this origin once (the CSP forbids CDNs) and renders the document into a container. */
function loadSwaggerUi(): Promise<SwaggerUiBundle> {
  const w = window as unknown as { SwaggerUIBundle?: SwaggerUiBundle; bridgeSwaggerLoad?: Promise<SwaggerUiBundle> };
  if (w.SwaggerUIBundle) return Promise.resolve(w.SwaggerUIBundle);
  w.bridgeSwaggerLoad ??= new Promise((resolve, reject) => {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = `${ASSETS}/swagger-ui.css`;
    // First in <head>: the console's theme for Swagger UI (swagger-theme.css) comes after it and wins.
    document.head.prepend(css);
    const script = document.createElement('script');
    script.src = `${ASSETS}/swagger-ui-bundle.js`;
    script.onload = () => (w.SwaggerUIBundle ? resolve(w.SwaggerUIBundle) : reject(new Error('Swagger UI did not load')));
    script.onerror = () => reject(new Error('Swagger UI could not be loaded'));
    document.head.appendChild(script);
  });
  return w.bridgeSwaggerLoad;
}

/**
 * Swagger UI's markup, made accessible through its plugin API. With deep linking on, it renders each operation's
 * path as a link inside the button that opens the operation (a control inside a control: screen readers announce
 * one and keyboards reach both) and each tag's name as a link inside its heading. Rendering the text without the
 * link keeps deep linking itself (the address still follows the open operation, and opening such an address
 * still scrolls to it).
 */
const accessibleMarkup: SwaggerPlugin = () => ({
  wrapComponents: {
    DeepLink: (Original, system) => (props) => system.React.createElement(Original, { ...props, enabled: false }),
  },
});

/**
 * Controls Swagger UI renders without a name a screen reader could read: the server picker (a <select> inside an
 * empty <label>), the request body editor of "Try it out" and the dialog's close button (an icon only). They
 * appear as the reader opens things, so the names are given whenever Swagger UI changes its markup.
 */
const UNNAMED: [selector: string, name: string][] = [
  ['.servers select', 'Server'],
  ['textarea.body-param__text', 'Request body'],
  ['.dialog-ux button.close-modal', 'Close'],
];

function nameUnnamedControls(root: HTMLElement) {
  for (const [selector, name] of UNNAMED) {
    for (const element of root.querySelectorAll(selector)) if (!element.hasAttribute('aria-label')) element.setAttribute('aria-label', name);
  }
  // A long example or response scrolls inside its box: a keyboard user reaches it (and scrolls it) only if it can
  // take the focus.
  for (const block of root.querySelectorAll('.highlight-code .microlight')) if (!block.hasAttribute('tabindex')) block.setAttribute('tabindex', '0');
}

export function SwaggerUi({ url }: { url: string }) {
  const container = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let cancelled = false;
    const naming = new MutationObserver(() => container.current && nameUnnamedControls(container.current));
    if (container.current) naming.observe(container.current, { childList: true, subtree: true });
    loadSwaggerUi()
      .then((bundle) => {
        const domNode = container.current;
        if (cancelled || !domNode) return;
        bundle({
          url,
          domNode,
          deepLinking: true,
          // Plain text for examples and responses: the highlighter's colours are fixed for a dark ground and
          // some fall below AA contrast; the theme gives code blocks the console's own code colours instead.
          syntaxHighlight: false,
          plugins: [accessibleMarkup],
        });
      })
      .catch((err: Error) => setError(`${err.message}. The document itself is at ${url}.`));
    return () => {
      cancelled = true;
      naming.disconnect();
    };
  }, [url]);
  return (
    <>
      {error && <p role="alert">{error}</p>}
      <div ref={container} className="api-docs" data-testid="swagger-ui" />
    </>
  );
}
