/**
 * What a Worker without any API token (`API_TOKEN` or a scoped one) tells its caller to do, which depends on where it runs. Local
 * development is normally known from `ENVIRONMENT=development`, but that comes from `.dev.vars`,
 * the very file that is missing then; so the request itself tells: `wrangler dev` is reached at
 * localhost or an IP address, a deployment only by a host name (a Cloudflare route or workers.dev).
 * Only the advice depends on it: either way the Worker refuses to serve.
 */

const LOCAL_ADVICE =
  "no API token is set (API_TOKEN or a scoped token): for local development create .dev.vars (`npm start` creates it from .dev.vars.example) and restart `wrangler dev`; refusing to serve";
const DEPLOYED_ADVICE = "no API token is set (API_TOKEN or a scoped token): set one with `wrangler secret put API_TOKEN`; refusing to serve";

/** Whether a request was addressed to this machine or an IP address: `wrangler dev`, never a deployment. */
export function isLocalRequest(requestUrl: string): boolean {
  let host: string;
  try {
    host = new URL(requestUrl).hostname;
  } catch {
    return false;
  }
  return host === "localhost" || host.endsWith(".localhost") || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith("[");
}

/** The message of the `500 misconfigured` answer to a request when no token is set. */
export function missingTokenMessage(requestUrl: string): string {
  return isLocalRequest(requestUrl) ? LOCAL_ADVICE : DEPLOYED_ADVICE;
}
