/** Calls one bench route of the Worker and returns its JSON answer plus the wall time seen from Node. */
export async function post(baseUrl, path, params) {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
  const started = performance.now();
  const response = await fetch(`${baseUrl}${path}?${query}`, { method: "POST" });
  const text = await response.text();
  const wallMs = performance.now() - started;
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${path}: HTTP ${response.status}, not JSON: ${text.slice(0, 500)}`);
  }
  if (!response.ok || body.error) throw new Error(`${path}: HTTP ${response.status}: ${body.error ?? text.slice(0, 500)}`);
  return { ...body, wallMs };
}

/**
 * One JSON request: `{ status, body, ms }` (ms: wall time seen from Node). Throws on anything but
 * the expected statuses (default: 2xx), with the answer's text.
 */
export async function call(baseUrl, method, path, { body, token, expect } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const started = performance.now();
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: typeof body === "string" || body === undefined ? body : JSON.stringify(body) });
  const text = await response.text();
  const ms = performance.now() - started;
  const ok = expect ? expect.includes(response.status) : response.ok;
  if (!ok) throw new Error(`${method} ${path}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    throw new Error(`${method} ${path}: HTTP ${response.status}, not JSON: ${text.slice(0, 500)}`);
  }
  return { status: response.status, body: parsed, ms };
}
