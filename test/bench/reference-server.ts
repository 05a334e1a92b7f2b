/**
 * The yardstick of issue 5: a hand-written node:http + mysql2 server with cached totals, serving
 * S1-S4 on the same data as the app (the listing itself is reference-listing.ts), so that
 * `npm run bench -- --reference` measures the ratios the targets are set in on this machine, in
 * the same run.
 *
 * Started by the bench as `node -r @swc-node/register test/bench/reference-server.ts` with
 * DATABASE_URL and PORT; not part of the service.
 */
import { createServer, type ServerResponse } from 'node:http';
import { answer, pool, type Answer } from './reference-listing';

function send(response: ServerResponse, { status, body }: Answer): void {
  const json = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
  });
  response.end(json);
}

const server = createServer((request, response) => {
  answer(request.url ?? '/', request.headers.authorization).then(
    (reply) => send(response, reply),
    (error: unknown) => send(response, { status: 500, body: { title: String(error) } }),
  );
});

server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close();
  void pool.end().then(() => process.exit(0));
});
