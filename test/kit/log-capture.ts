import type { DestinationStream } from 'pino';

/**
 * A pino destination that keeps the lines in memory. pino writes one serialized JSON line per
 * `write` call, so what the tests read is exactly what would have reached stdout.
 */
export class LogCapture {
  private readonly raw: string[] = [];

  readonly destination: DestinationStream = {
    write: (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim()) this.raw.push(line);
    },
  };

  lines(): Record<string, unknown>[] {
    return this.raw.map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Every line as written, unparsed (to search for a string anywhere in the output). */
  text(): string {
    return this.raw.join('\n');
  }

  async waitFor(
    predicate: (line: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines().find(predicate);
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(
          `no log line matched within ${timeoutMs} ms; lines so far:\n${this.raw.join('\n')}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
