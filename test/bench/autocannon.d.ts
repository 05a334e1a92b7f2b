/** The part of autocannon's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    /** Seconds a request may take before it counts as a timeout (default 10). */
    timeout?: number;
    headers?: Record<string, string>;
    /** Sent in rotation by every connection; each may set its own path and headers. */
    requests?: {
      method?: string;
      path: string;
      headers?: Record<string, string>;
      /** Called with each reply to this request. */
      onResponse?: (status: number, body: string) => void;
    }[];
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    max: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    /** Failed requests, the timed-out ones included. */
    errors: number;
    /** The requests of `errors` that timed out. */
    timeouts: number;
    non2xx: number;
    statusCodeStats: Record<string, { count: number }>;
  }
  function autocannon(options: Options): Promise<Result>;
  export = autocannon;
}
