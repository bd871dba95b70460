/** The Hono environment of the API Worker: bindings plus what middleware puts on each request. */
import type { Config } from "../../src/config";
import type { Log } from "../../src/log/types";
import type { Env } from "../env";

export interface ApiEnv {
  Bindings: Env;
  Variables: {
    config: Config;
    log: Log;
  };
}
