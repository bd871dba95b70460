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
