/**
 * Polls `read` every `intervalMs` (10) until `done` holds of its value or `timeoutMs` pass, and
 * gives the last value read, for the caller to assert on. Timed by `performance.now()`, so that a test that mocks
 * `Date.now()` can poll too.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 2_000,
  intervalMs = 10,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let value = await read();
  while (!done(value) && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await read();
  }
  return value;
}
