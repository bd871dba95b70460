/** The Hono environment of the API Worker: bindings plus what middleware puts on each request. */
import type { Config } from "../../src/config";
import type { Log } from "../../src/log/types";
import type { EdgeStreamsEnv } from "../../platform/bindings";
import type { Host } from "../../platform/host";
import type { Role } from "./credentials";

/** Who the request is, as authentication found (workers/api/authenticate.ts). */
export interface Access {
  /** The roles its credential grants. */
  readonly roles: ReadonlySet<Role>;
  /** How it proved it: a token (bearer or HTTP Basic), the session cookie, or not at all (an open local Worker). */
  readonly via: "bearer" | "basic" | "cookie" | "open";
}

export interface ApiEnv {
  Bindings: EdgeStreamsEnv;
  Variables: {
    /** The application this Worker runs, with its configuration, log and objects. */
    host: Host;
    config: Config;
    log: Log;
    /** Set for every route but the public ones (`/healthz`, `/login`, `/logout`). */
    access: Access;
  };
}
