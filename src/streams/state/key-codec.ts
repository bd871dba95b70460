/**
 * Order-preserving encodings for composite store keys, so that window, session and buffer stores
 * can live in a plain `RawKeyValueStore` (and so be change-logged and restored like any store).
 *
 * Raw keys are compared as UTF-8 bytes (code points). Two building blocks keep that order useful:
 * - `encodeTime`: a non-negative millisecond time as 16 zero-padded decimal digits. Fixed width
 *   makes byte order equal numeric order; 16 digits hold every safe integer.
 * - `encodeKey`: a serialized key, escaped and terminated so that no encoded key is a prefix of
 *   another. All entries of one key are then one contiguous range, whatever characters the key
 *   holds. The escape character is U+0001 (`\u0001` becomes `\u0001\u0002`) and the terminator
 *   `\u0001\u0001`; no NUL is added, so backends that mishandle NUL in text see none of ours.
 */

/** Digits of an encoded time. */
export const TIME_WIDTH = 16;
/** The largest encodable time (`Number.MAX_SAFE_INTEGER`, 16 digits). */
export const MAX_TIME = Number.MAX_SAFE_INTEGER;

const ESCAPE = "\u0001";
const ESCAPED_ESCAPE = "\u0001\u0002";
const TERMINATOR = "\u0001\u0001";

export function encodeTime(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`cannot encode time ${ms}: times in stores are non-negative safe integers`);
  return String(ms).padStart(TIME_WIDTH, "0");
}

/** The time encoded at `at` in `text`. */
export function decodeTime(text: string, at: number): number {
  const digits = text.slice(at, at + TIME_WIDTH);
  if (!/^\d{16}$/.test(digits)) throw new Error(`corrupt store key: no time at ${at} in ${JSON.stringify(text.slice(0, 80))}`);
  return Number(digits);
}

/** The escaped key followed by the terminator. */
export function encodeKey(serializedKey: string): string {
  return serializedKey.replaceAll(ESCAPE, ESCAPED_ESCAPE) + TERMINATOR;
}

/** Decodes the encoded key starting at `at`; `next` is the index just after its terminator. */
export function decodeKey(text: string, at: number): { readonly key: string; readonly next: number } {
  let key = "";
  let from = at;
  for (;;) {
    const escapeAt = text.indexOf(ESCAPE, from);
    if (escapeAt < 0 || escapeAt + 1 >= text.length) throw new Error(`corrupt store key: unterminated key in ${JSON.stringify(text.slice(0, 80))}`);
    key += text.slice(from, escapeAt);
    const marker = text[escapeAt + 1];
    if (marker === ESCAPE) return { key, next: escapeAt + 2 };
    if (marker !== "\u0002") throw new Error(`corrupt store key: bad escape in ${JSON.stringify(text.slice(0, 80))}`);
    key += ESCAPE;
    from = escapeAt + 2;
  }
}
