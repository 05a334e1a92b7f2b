import { createHmac, createSecretKey, KeyObject, timingSafeEqual } from 'node:crypto';
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

const SIGNATURE_LENGTH = 22; // 128 bits of HMAC-SHA256, base64url
const SIGNATURE = /^[\w-]{22}$/;

/**
 * Encodes walk positions as the opaque `cursor` of `Link: rel="next"`, signed together with the
 * walk's binding (filters, sort, scope), so that a cursor is refused on any other walk and a
 * changed one is refused outright. The scope is also applied from the token on every step: a
 * cursor only says where to continue, never what may be seen.
 */
@Injectable()
export class ListingCursors {
  /** The secret as a key object, made once: every page's `next` link is signed with it. */
  private readonly key: KeyObject;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.key = createSecretKey(Buffer.from(config.cursorSecret));
  }

  encode(binding: string, position: WalkPosition): string {
    const payload = Buffer.from(
      JSON.stringify([position.value, position.id, position.offset]),
    ).toString('base64url');
    return `${payload}.${this.sign(binding, payload)}`;
  }

  /** The position `cursor` stands for on the walk `binding`, or a 400 naming `cursor`. */
  decode(binding: string, cursor: string): WalkPosition {
    const [payload, signature, extra] = cursor.split('.');
    if (extra === undefined && payload && signature && SIGNATURE.test(signature)) {
      const expected = Buffer.from(this.sign(binding, payload));
      if (timingSafeEqual(expected, Buffer.from(signature))) {
        const position = parsePosition(payload);
        if (position) return position;
      }
    }
    throw ProblemException.badRequest([
      {
        parameter: 'cursor',
        message:
          'is not a cursor of this walk: use the `next` link as given, with the filters, sort and token it was made for',
      },
    ]);
  }

  private sign(binding: string, payload: string): string {
    return createHmac('sha256', this.key)
      .update(`${binding}\n${payload}`)
      .digest('base64url')
      .slice(0, SIGNATURE_LENGTH);
  }
}

function parsePosition(payload: string): WalkPosition | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString());
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
