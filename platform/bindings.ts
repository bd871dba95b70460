/**
 * The bindings a Worker running Edge Streams must give it: the Durable Object namespaces,
 * under these names (five required, the subscription hub's optional), the vars of src/config.ts (all optional), and optionally a rate limiter. The Worker's own `Env` is what
 * `wrangler types` generates from its wrangler.toml; it must be assignable to this.
 */
import type { ConfigVars } from "../src/config";
import type { ConsumerGroup } from "../durable-objects/consumer-group";
import type { Coordinator } from "../durable-objects/coordinator";
import type { LogPartition } from "../durable-objects/log-partition";
import type { RestoreWorker } from "../durable-objects/restore-worker";
import type { SubscriptionHub } from "../durable-objects/subscription-hub";
import type { TaskObject } from "../durable-objects/task-object";

export type EdgeStreamsEnv = ConfigVars & {
  readonly LOG_PARTITION: DurableObjectNamespace<LogPartition>;
  readonly CONSUMER_GROUP: DurableObjectNamespace<ConsumerGroup>;
  readonly TASK_OBJECT: DurableObjectNamespace<TaskObject>;
  readonly COORDINATOR: DurableObjectNamespace<Coordinator>;
  readonly RESTORE_WORKER: DurableObjectNamespace<RestoreWorker>;
  /**
   * Optional: the objects that hold WebSocket subscriptions while hibernating (docs/subscriptions.md);
   * without it (or with a log that wakes no readers) the Worker holds each socket and polls.
   */
  readonly SUBSCRIPTION_HUB?: DurableObjectNamespace<SubscriptionHub>;
  /**
   * Optional: Cloudflare's rate-limiting binding (`[[ratelimits]]`), counting failed
   * authentication per client; without it each isolate counts alone (workers/api/auth-failures.ts).
   */
  readonly AUTH_RATE_LIMITER?: RateLimit;
  /**
   * Optional: the R2 bucket (`[[r2_buckets]]`) that topics with `remote.storage.enable` move their
   * closed rows to (docs/retention-and-compaction.md, tiered storage); without it such a topic is refused.
   */
  readonly TIERED_STORAGE?: R2Bucket;
};
