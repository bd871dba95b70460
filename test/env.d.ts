// `env` from "cloudflare:workers" / "cloudflare:test" in tests is the Worker's own Env.
import type { Env as WorkerEnv } from "../workers/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
