/**
 * The request body limit (docs/http-api.md: a body over MAX_BODY_BYTES answers 413), for every route.
 *
 * A body with a Content-Length over the limit is refused unread: the runtime knows where it ends
 * and skips it. A body without one (chunked) is counted as it is read; one that grows past the
 * limit is then read to its end and dropped before the 413 goes out. Answering in the middle of a
 * chunked body (as hono's `bodyLimit` does, even after cancelling the stream) leaves the rest of
 * it in the connection between `wrangler dev`'s proxy and the runtime: the next requests hang, or
 * fail with "worker restarted mid-request". Draining is bounded by DRAIN_LIMIT_BYTES; a client
 * that sends more than that has its body cancelled.
 */
import type { Context, Env, MiddlewareHandler } from "hono";
import { ApiError } from "./http-error";

/**
 * Most bytes of a refused body read and dropped. Cloudflare refuses larger bodies before a
 * deployed Worker sees them (100 MB on the Free and Pro plans), so there it is only a backstop.
 */
export const DRAIN_LIMIT_BYTES = 100 * 1024 * 1024;

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, "too_large", `request body is larger than ${maxBytes} bytes`);
}

/** Reads what is left of a refused body, dropping it; cancels it past DRAIN_LIMIT_BYTES. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, alreadyRead: number): Promise<void> {
  let read = alreadyRead;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > DRAIN_LIMIT_BYTES) {
        await reader.cancel("request body too large");
        return;
      }
    }
  } catch {
    // The client went away: nothing left to drain.
  }
}

/** Refuses bodies over `maxBytes(c)`; a body within it reaches the routes whole (buffered). */
export function bodyLimit<E extends Env>(maxBytes: (c: Context<E>) => number): MiddlewareHandler<E> {
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const max = maxBytes(c);
    const length = c.req.raw.headers.get("content-length");
    if (length !== null && !c.req.raw.headers.has("transfer-encoding")) {
      if (Number(length) > max) throw tooLarge(max);
      return next();
    }
    const reader = body.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await drain(reader, size);
        throw tooLarge(max);
      }
      parts.push(value);
    }
    const whole = new Uint8Array(size);
    let at = 0;
    for (const part of parts) {
      whole.set(part, at);
      at += part.byteLength;
    }
    c.req.raw = new Request(c.req.raw, { body: whole });
    return next();
  };
}
