'use client';

import { useEffect, useRef, useState } from 'react';

type SwaggerUiBundle = (options: { url: string; domNode: HTMLElement; deepLinking?: boolean; tryItOutEnabled?: boolean }) => unknown;

const ASSETS = '/api-docs/assets';

/** Loads Swagger UI from this origin once (the CSP forbids CDNs) and renders the document into a container. */
function loadSwaggerUi(): Promise<SwaggerUiBundle> {
  const w = window as unknown as { SwaggerUIBundle?: SwaggerUiBundle; bridgeSwaggerLoad?: Promise<SwaggerUiBundle> };
  if (w.SwaggerUIBundle) return Promise.resolve(w.SwaggerUIBundle);
  w.bridgeSwaggerLoad ??= new Promise((resolve, reject) => {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = `${ASSETS}/swagger-ui.css`;
    document.head.appendChild(css);
    const script = document.createElement('script');
    script.src = `${ASSETS}/swagger-ui-bundle.js`;
    script.onload = () => (w.SwaggerUIBundle ? resolve(w.SwaggerUIBundle) : reject(new Error('Swagger UI did not load')));
    script.onerror = () => reject(new Error('Swagger UI could not be loaded'));
    document.head.appendChild(script);
  });
  return w.bridgeSwaggerLoad;
}

export function SwaggerUi({ url }: { url: string }) {
  const container = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let cancelled = false;
    loadSwaggerUi()
      .then((bundle) => {
        if (!cancelled && container.current) bundle({ url, domNode: container.current, deepLinking: true });
      })
      .catch((err: Error) => setError(`${err.message}. The document itself is at ${url}.`));
    return () => {
      cancelled = true;
    };
  }, [url]);
  return (
    <>
      {error && <p role="alert">{error}</p>}
      {/* Swagger UI brings its own light styles: give it a light ground in either console theme. */}
      <div ref={container} data-testid="swagger-ui" style={{ background: '#fff', color: '#222', borderRadius: 6, padding: '0.5rem 0' }} />
    </>
  );
}
