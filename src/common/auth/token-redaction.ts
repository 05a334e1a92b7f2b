/**
 * Anything shaped like one of our tokens, as it may appear in a URL: any of its characters, the
 * prefix's included, may be percent-encoded.
 */
const TOKEN_IN_TEXT =
  /(?:l|%6c)(?:s|%73)(?:k|%6b)(?:_|%5f)(?:[A-Za-z0-9_-]|%[0-9A-Fa-f]{2}){20,}/gi;

/**
 * Blanks out anything token-shaped. Tokens belong in the Authorization header only, but a client
 * may put one in a URL (path, query value, even a parameter name), and URLs and parameter names
 * are echoed in problem bodies and logged.
 */
export function redactTokens(text: string): string {
  return text.replace(TOKEN_IN_TEXT, 'lsk_[redacted]');
}
