/** `rel` → URL of an RFC 8288 Link header, e.g. `parseLinks(response.headers.link).next`. */
export function parseLinks(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(/,\s*(?=<)/)) {
    const match = /^<([^>]*)>;\s*rel="([^"]+)"$/.exec(part.trim());
    if (match) out[match[2]] = match[1];
  }
  return out;
}
