/**
 * The part of `edge-streams` that describes an application and needs no Workers runtime: the
 * topology DSL, its test driver (`TopologyTestDriver`), configuration vars and record limits. An
 * example's topology (examples/<name>/topology.ts) needs only this, so tests of it run in plain
 * Node (test/unit, where `edge-streams` resolves here). `index.ts` adds the Durable Objects.
 */
export * from "../src/streams/index";
export { ConfigError, intVar } from "../src/config";
export { MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES } from "../src/log/records";
export { Application, type ApplicationOptions } from "../src/application";
export type { RestoreListener, StandbyUpdateListener } from "../src/streams/restore-listeners";
export type { Config, ConfigVars } from "../src/config";
export type { TopicPartition, LogRecord } from "../src/log/types";
