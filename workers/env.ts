/** The bindings and vars every Edge Streams Worker sees (see wrangler.toml and API.md). */
import type { LogPartition } from "../durable-objects/log-partition";

export interface Env {
  API_TOKEN?: string;
  ENVIRONMENT?: string;
  PLACEMENTS?: string;
  NUM_STANDBYS?: string;
  ACCEPTABLE_RECOVERY_LAG?: string;
  RESTORE_BATCH_RECORDS?: string;
  FAULT_INJECTION?: string;
  MAX_BODY_BYTES?: string;
  LOG_BACKEND?: string;
  UPSTASH_KAFKA_REST_URL?: string;
  UPSTASH_KAFKA_REST_USERNAME?: string;
  UPSTASH_KAFKA_REST_PASSWORD?: string;
  UPSTASH_TIMEOUT_MS?: string;
  TOPICS?: string;
  LOG_PARTITION: DurableObjectNamespace<LogPartition>;
  CONSUMER_GROUP: DurableObjectNamespace<import("../durable-objects/consumer-group").ConsumerGroup>;
  TASK_OBJECT: DurableObjectNamespace<import("../durable-objects/task-object").TaskObject>;
  COORDINATOR: DurableObjectNamespace<import("../durable-objects/coordinator").Coordinator>;
  RESTORE_WORKER: DurableObjectNamespace<import("../durable-objects/restore-worker").RestoreWorker>;
}
