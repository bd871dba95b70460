/**
 * Durable identities, built and parsed in this one place: a task instance's object is
 * `<task>@<placement>`, a placement's restore workers `restore@<placement>` (shard 0) and
 * `restore@<placement>#<shard>` (shards 1 and up; src/restore/sharding.ts), a log partition
 * `<topic>/<partition>` (its subscription hub `hub:<topic>/<partition>`) (the name a partition goes by everywhere), the application's coordinator `coordinator`, a Kafka REST consumer group
 * `group:<id>` (and its directory `directory`). If two copies of a name drifted, state would split
 * between two objects.
 */

/** The task object of one instance of a task at a placement. */
export function instanceName(instance: { readonly taskId: string; readonly placement: string }): string {
  return `${instance.taskId}@${instance.placement}`;
}

const RESTORE_PREFIX = "restore@";

/**
 * A restore worker of a placement: shard 0 keeps the name a placement's only restore worker had
 * before restore workers were sharded (its registrations stay valid).
 */
export function restoreWorkerName(placement: string, shard = 0): string {
  return shard === 0 ? `${RESTORE_PREFIX}${placement}` : `${RESTORE_PREFIX}${placement}#${shard}`;
}

/** The placement and shard of a restore worker's name; undefined for any other name. */
export function parseRestoreWorkerName(name: string): { placement: string; shard: number } | undefined {
  const match = /^restore@([^#@/]+)(?:#([1-9][0-9]*))?$/.exec(name);
  return match ? { placement: match[1]!, shard: match[2] === undefined ? 0 : Number(match[2]) } : undefined;
}

/** The task and placement of a task instance's object name (`<task>@<placement>`); undefined for another name. */
export function parseInstanceName(name: string): { taskId: string; placement: string } | undefined {
  const at = name.lastIndexOf("@");
  if (at <= 0 || at === name.length - 1 || name.startsWith(RESTORE_PREFIX)) return undefined;
  return { taskId: name.slice(0, at), placement: name.slice(at + 1) };
}

/** Whether an object name is a restore worker's (log partitions wake both task objects and restore workers). */
export function isRestoreWorkerName(name: string): boolean {
  return name.startsWith(RESTORE_PREFIX);
}

const HUB_PREFIX = "hub:";

/** The subscription hub of a topic partition (docs/subscriptions.md): a store changelog's for its watches, any topic's for its tails; `hub:<topic>/<partition>`. */
export function subscriptionHubName(tp: { readonly topic: string; readonly partition: number }): string {
  return `${HUB_PREFIX}${topicPartition(tp)}`;
}

/** Whether an object name is a subscription hub's. */
export function isSubscriptionHubName(name: string): boolean {
  return name.startsWith(HUB_PREFIX);
}

/**
 * Whether a partition's subscriber hears of appends by answering a wake-up (restore workers and
 * subscription hubs, whose answers src/log/echoes.ts tracks), rather than as a task reader does.
 */
export function hearsByAnswering(name: string): boolean {
  return isRestoreWorkerName(name) || isSubscriptionHubName(name);
}

/**
 * A partition of a topic by name, `<topic>/<partition>` (a `/` never occurs in a topic name): the
 * object of that partition of the embedded log, and the key, label and cursor a partition goes by
 * everywhere else (input positions, checkpoints, batches, messages).
 */
export function topicPartition(tp: { readonly topic: string; readonly partition: number }): string {
  return `${tp.topic}/${tp.partition}`;
}

/**
 * The topic and partition of a `topicPartition` name; undefined for any other string. The exact
 * inverse of `topicPartition` (a `/` never occurs in a topic name): topics are checked where they
 * are declared, and Kafka's ported tests name positions of the empty topic.
 */
export function parseTopicPartition(name: string): { topic: string; partition: number } | undefined {
  const match = /^([^/]*)\/(0|[1-9][0-9]{0,8})$/.exec(name);
  return match ? { topic: match[1]!, partition: Number(match[2]) } : undefined;
}

/**
 * The consumer group whose committed offset in a partition of a sink's topic is the sink's
 * position there (src/connectors/sink-delivery.ts): the next offset to deliver.
 */
export function sinkGroup(sink: string): string {
  return `edge-streams.sink.${sink}`;
}

/** A record's identity outside (a sink's idempotency id): `<topic>/<partition>/<offset>`, unique for the topic's life. */
export function recordId(tp: { readonly topic: string; readonly partition: number }, offset: number): string {
  return `${topicPartition(tp)}/${offset}`;
}

/** The coordinator of the application (one per Worker, so one name). */
export const COORDINATOR_NAME = "coordinator";

/** The object that runs a consumer group of the Kafka REST endpoint (a prefix keeps group names apart from the directory's). */
export function groupObjectName(group: string): string {
  return `group:${group}`;
}

/** The object that lists the consumer groups (Durable Objects cannot be enumerated). */
export const GROUP_DIRECTORY_NAME = "directory";
