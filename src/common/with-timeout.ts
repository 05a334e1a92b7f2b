/** `promise`, or a rejection with `timedOut()` once `ms` have passed; the timer goes either way. */
export function withTimeout<T>(promise: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
