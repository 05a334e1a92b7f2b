import { createConnection, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy in the test process between the app and a database server, to cut the database
 * off (`stop()`: open connections are dropped, new ones refused) and bring it back (`start()`
 * on the same port), as a network outage or a database restart would.
 */
export class TcpProxy {
  private server?: Server;
  private frozen = false;
  private stalled = false;
  private delay?: { text: string; ms: number; times: number };
  /** Per client connection, what it sent while a delayed packet of it was held. */
  private readonly held = new Map<Socket, Buffer[]>();
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    const server = createServer((client) => {
      if (this.frozen) {
        // Accepted, never answered: a database host that went silent.
        this.sockets.add(client);
        client.on('close', () => this.sockets.delete(client));
        client.on('error', () => client.destroy());
        return;
      }
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (chunk: Buffer) => this.forward(client, upstream, chunk));
      client.on('end', () => upstream.end());
      upstream.pipe(client);
      if (this.stalled) for (const socket of [client, upstream]) socket.pause();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    return this.port;
  }

  /**
   * The database goes silent: bytes already on their way are dropped, nothing more is forwarded
   * in either direction, and new connections are accepted but never answered. `stop()` then
   * `start()` bring it back.
   */
  freeze(): void {
    this.frozen = true;
    for (const socket of this.sockets) {
      socket.unpipe();
      socket.removeAllListeners('data');
      socket.pause();
    }
  }

  /**
   * The link stalls: bytes in either direction are held, not dropped, until `resume()` delivers
   * them, as after a network partition that heals.
   */
  stall(): void {
    this.stalled = true;
    for (const socket of this.sockets) socket.pause();
  }

  resume(): void {
    this.stalled = false;
    for (const socket of this.sockets) socket.resume();
  }

  /**
   * Holds the next packet sent to the server that contains `text` (an SQL statement) for `ms`;
   * with `times`, each of the next that many such packets.
   */
  delayNext(text: string, ms: number, times = 1): void {
    this.delay = { text, ms, times };
  }

  /** Holds no further packet (those held already go on when their time is up). */
  cancelDelays(): void {
    this.delay = undefined;
  }

  private forward(client: Socket, upstream: Socket, chunk: Buffer): void {
    const held = this.held.get(client);
    if (held) {
      held.push(chunk);
      return;
    }
    if (this.delay && chunk.includes(this.delay.text)) {
      const queue = [chunk];
      this.held.set(client, queue);
      setTimeout(() => {
        this.held.delete(client);
        for (const part of queue) if (!upstream.destroyed) upstream.write(part);
      }, this.delay.ms).unref(); // a packet held past the test's end keeps no process alive
      if (--this.delay.times === 0) this.delay = undefined;
      return;
    }
    upstream.write(chunk);
  }

  async stop(): Promise<void> {
    this.frozen = false;
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
