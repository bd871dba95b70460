/** The Hono environment of the API Worker: bindings plus what middleware puts on each request. */
import type { Config } from "../../src/config";
import type { Log } from "../../src/log/types";
import type { EdgeStreamsEnv } from "../../platform/bindings";
import type { Host } from "../../platform/host";

export interface ApiEnv {
  Bindings: EdgeStreamsEnv;
  Variables: {
    /** The application this Worker runs, with its configuration, log and objects. */
    host: Host;
    config: Config;
    log: Log;
  };
}
