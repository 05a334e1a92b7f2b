import { createCipheriv, createDecipheriv, createHash, createHmac } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ProblemException } from '../problem-details/problem.exception';

/**
 * Where a walk stands: after the row with sort value `value` (null when the sort is `id`) and id
 * `id`, with `offset` rows of the listing before it (what `current_page` is worked out from).
 */
export interface WalkPosition {
  value: string | null;
  id: number;
  offset: number;
}

/** A GCM tag: 128 bits, base64url. */
const TAG = /^[\w-]{22}$/;
const IV_BYTES = 12;

/**
 * Encodes walk positions as the opaque `cursor` of `Link: rel="next"`: encrypted (AES-256-GCM), so
 * that the sort value it carries (a name, an e-mail) is not readable in URLs and logs, and
 * authenticated together with the walk's binding (filters, sort, scope), so that a cursor is
 * refused on any other walk and a changed one is refused outright. The scope is also applied from
 * the token on every step: a cursor only says where to continue, never what may be seen.
 */
@Injectable()
export class ListingCursors {
  /** Made once from the secret: every page's `next` link is sealed with them. */
  private readonly key: Buffer;
  private readonly ivKey: Buffer;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const derived = (purpose: string) =>
      createHash('sha256').update(`${purpose}\n${config.cursorSecret}`).digest();
    this.key = derived('listing cursor key');
    this.ivKey = derived('listing cursor iv');
  }

  encode(binding: string, position: WalkPosition): string {
    const plain = Buffer.from(JSON.stringify([position.value, position.id, position.offset]));
    // Derived from what is sealed (a synthetic IV): the same position gives the same link.
    const iv = createHmac('sha256', this.ivKey)
      .update(`${binding}\n`)
      .update(plain)
      .digest()
      .subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(binding));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final()]);
    return `${sealed.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
  }

  /**
   * The position `cursor` stands for on the walk `binding` (or, sealed by an earlier release, on
   * `earlier`), or a 400 naming `cursor`.
   */
  decode(binding: string, cursor: string, earlier?: () => string): WalkPosition {
    const [payload, tag, extra] = cursor.split('.');
    const well = extra === undefined && payload && tag && TAG.test(tag);
    const position =
      well &&
      (this.open(binding, payload, tag) ||
        (earlier !== undefined && this.open(earlier(), payload, tag)));
    if (position) return position;
    throw ProblemException.badRequest([
      {
        parameter: 'cursor',
        message:
          'is not a cursor of this walk: use the `next` link as given, with the filters and sort it was made for, under a token of the same organization',
      },
    ]);
  }

  private open(binding: string, payload: string, tag: string): WalkPosition | undefined {
    const sealed = Buffer.from(payload, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    // Only as encode spells it: base64 ignores a last character's unused bits, and a cursor
    // changed there would otherwise open as the one it was changed from.
    const canonical =
      sealed.toString('base64url') === payload && tagBytes.toString('base64url') === tag;
    if (!canonical || sealed.length <= IV_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES))
        .setAAD(Buffer.from(binding))
        .setAuthTag(tagBytes);
      const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES)), decipher.final()]);
      return parsePosition(plain.toString());
    } catch {
      return undefined; // not sealed with this key for this walk
    }
  }
}

function parsePosition(text: string): WalkPosition | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
    const [value, id, offset] = parsed as unknown[];
    if (value !== null && typeof value !== 'string') return undefined;
    if (!Number.isSafeInteger(id) || (id as number) < 0) return undefined;
    if (!Number.isSafeInteger(offset) || (offset as number) < 0) return undefined;
    return { value, id: id as number, offset: offset as number };
  } catch {
    return undefined;
  }
}
