import Link from 'next/link';
import { SwaggerUi } from '@/components/api-docs/SwaggerUi';
import { PageHeader } from '@/components/ui/PageHeader';

export const metadata = { title: 'API reference · Bridge Console' };

/** The JSON API's OpenAPI document, rendered. Open like the document itself: it describes, it grants nothing. */
export default function ApiDocsPage() {
  return (
    <>
      <PageHeader
        title="API reference"
        description={
          <>
            The JSON API as OpenAPI 3.1, generated from the schemas the routes validate with: <a href="/api/openapi.json">/api/openapi.json</a>.
            Events for other services (NATS JetStream) are described in its <code>x-events</code> section and in the{' '}
            <Link href="/docs/events">Events reference</Link>.
          </>
        }
      />
      <SwaggerUi url="/api/openapi.json" />
    </>
  );
}
