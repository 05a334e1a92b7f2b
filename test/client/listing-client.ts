import createClient, { type Middleware } from 'openapi-fetch';
import type { ContractValidator } from '../kit/contract';
import type { paths } from './generated/listing-api';

/**
 * The typed client consumers would build: openapi-fetch over the types openapi-typescript
 * generates from the checked-in openapi.json (`npm run client:generate`). Nothing here is typed by
 * hand. With a contract, every reply is also held to the document, as kit.http() does.
 */
export function createListingClient(options: {
  baseUrl: string;
  token: string;
  contract?: ContractValidator;
}) {
  // JSON pages and problems: a 200 also documents the NDJSON export, which would widen `data`.
  const client = createClient<paths, 'application/json' | 'application/problem+json'>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.token}` },
  });
  const contract = options.contract;
  if (contract) {
    const checkReplies: Middleware = {
      async onResponse({ request, response }) {
        const url = new URL(request.url);
        contract.assert({
          method: request.method,
          url: `${url.pathname}${url.search}`,
          status: response.status,
          headers: Object.fromEntries(response.headers.entries()),
          text: await response.clone().text(),
        });
      },
    };
    client.use(checkReplies);
  }
  return client;
}

export type ListingClient = ReturnType<typeof createListingClient>;
