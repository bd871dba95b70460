/**
 * Whether a request was sent by a page of another origin. Browsers attach a session cookie and
 * remembered HTTP Basic credentials by themselves, so a request authenticated that way must come
 * from this origin's own pages (or no page: a typed URL, a non-browser client). Browsers say where
 * a request comes from in `Sec-Fetch-Site` (every current browser, every request) and `Origin`
 * (every cross-origin request but a plain GET navigation, and every POST); a client that sends
 * neither is not a browser, and cannot be made to act by another site. A bearer token is never
 * attached by a browser, so bearer requests need no such check.
 */

/**
 * True when the request comes from another origin. `Sec-Fetch-Site` decides when present: anything
 * but `same-origin` or `none` (a same-site origin on another port or subdomain is another origin
 * too). Without it (an older browser), an `Origin` that is not the request's own does, `null`
 * included (sandboxed contexts). `Origin` alone is not enough when both are sent: a page with
 * `Referrer-Policy: no-referrer` — the status page's — makes Chromium send `Origin: null` with its
 * own same-origin form.
 */
export function fromAnotherOrigin(request: Request): boolean {
  const site = request.headers.get("Sec-Fetch-Site");
  if (site !== null) return site !== "same-origin" && site !== "none";
  const origin = request.headers.get("Origin");
  return origin !== null && origin !== new URL(request.url).origin;
}
