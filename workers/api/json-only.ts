/**
 * Writes take JSON only: a request with a method that may change something (anything but GET,
 * HEAD and OPTIONS) and a body, or a `Content-Type`, must say `application/json` — else 415. A
 * browser sends a page's form or a cross-site "simple" request as a form or text body without
 * asking the server first (no CORS preflight); `application/json` it sends only after a preflight
 * this Worker never answers. A request without a body and without a type (`curl -X POST` of an
 * admin route) has nothing to parse and passes. `/login` and `/logout` take the form of the
 * sign-in page: they check the request's origin instead (routes/status-page.tsx).
 */
import type { MiddlewareHandler } from "hono";
import type { ApiEnv } from "./context";
import { ApiError } from "./http-error";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const FORM_ROUTES = new Set(["/login", "/logout"]);
const JSON_TYPE = /^application\/json\s*(;|$)/i;

/** Whether the request has a body (one of zero bytes is none). */
function hasBody(request: Request): boolean {
  if (request.body === null) return false;
  const length = request.headers.get("Content-Length");
  return length === null || length.trim() !== "0";
}

export const jsonOnly: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (SAFE_METHODS.has(c.req.method) || FORM_ROUTES.has(c.req.path)) return next();
  const type = c.req.header("Content-Type");
  if (type === undefined ? hasBody(c.req.raw) : !JSON_TYPE.test(type)) {
    throw new ApiError(
      415,
      "unsupported_media_type",
      `a ${c.req.method} body must be JSON, sent with Content-Type: application/json (got ${type === undefined ? "no Content-Type" : JSON.stringify(type.slice(0, 100))})`,
    );
  }
  await next();
};
