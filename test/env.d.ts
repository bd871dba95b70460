// `env` and `exports` from "cloudflare:workers" in tests are the Worker's own.
import type { Env as WorkerEnv } from "../workers/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
    interface GlobalProps {
      mainModule: typeof import("../workers/api/index");
    }
  }
}
