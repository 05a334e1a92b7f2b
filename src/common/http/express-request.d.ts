import 'http';

declare module 'http' {
  interface IncomingMessage {
    /** Set by the request-id middleware before anything else runs. */
    id: string;
  }
}
