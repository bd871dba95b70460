/**
 * Which store a query route may read, by kind: key-value stores through `/keys`, window and
 * session stores through `/windows`. A suppression buffer is internal (it holds results not yet
 * final) and answers to neither. Unknown stores are 404, the wrong route for a kind is 400.
 */
import type { Application } from "../../src/application";
import { ApiError } from "./http-error";

export type StoreRoute = "keys" | "windows";

export function queryableStore(application: Application, name: string, route: StoreRoute) {
  const found = application.store(name);
  if (!found) throw new ApiError(404, "not_found", `unknown store ${JSON.stringify(name)}`);
  const kind = found.store.kind;
  if (kind === "buffer")
    throw new ApiError(400, "invalid_input", `store ${name} is a suppression buffer: it holds results that are not final and cannot be queried`);
  const windowed = kind === "window" || kind === "session";
  if (route === "keys" && windowed) throw new ApiError(400, "invalid_input", `store ${name} is a ${kind} store: read it with /stores/${name}/windows/:key`);
  if (route === "windows" && !windowed)
    throw new ApiError(400, "invalid_input", `store ${name} is not a window or session store: read it with /stores/${name}/keys/:key`);
  return found;
}
