/** `rel` → URL of an RFC 8288 Link header, e.g. `parseLinks(response.headers.link).next`. */
export function parseLinks(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(/,\s*(?=<)/)) {
    const match = /^<([^>]*)>;\s*rel="([^"]+)"$/.exec(part.trim());
    if (match) out[match[2]] = match[1];
  }
  return out;
}

/** What `walkIds` needs of a client: `kit.as(token)` or `kit.client(…)`. */
interface Getter {
  get(path: string): PromiseLike<{ status: number; body: unknown; headers: object }>;
}

/**
 * Every id a walk by `Link: rel="next"` from `path` sees, in order, up to its first empty page (an
 * ascending id walk keeps `next` there, for polling) or a page without `next`.
 */
export async function walkIds(client: Getter, path: string, maxPages = 10_000): Promise<number[]> {
  const ids: number[] = [];
  let url: string | undefined = path;
  for (let page = 0; url !== undefined && page < maxPages; page++) {
    const response = await client.get(url);
    if (response.status !== 200) {
      throw new Error(`${url}: ${response.status} ${JSON.stringify(response.body)}`);
    }
    const { data } = response.body as { data: { id: number }[] };
    if (data.length === 0) return ids;
    ids.push(...data.map((item) => item.id));
    url = parseLinks((response.headers as { link?: string }).link).next;
  }
  if (url !== undefined) throw new Error(`${path}: still a next link after ${maxPages} pages`);
  return ids;
}
