/**
 * `edge-streams/testing`: `TopologyTestDriver` runs a topology in memory, synchronously (pure unit
 * tests of operators); `TestDriver` drives the real objects inside workerd in
 * `@cloudflare/vitest-pool-workers` tests — log partitions, coordinator, task objects, restore
 * workers — deterministically: no timers, no sleeps.
 */
export { TopologyTestDriver, type DriverRecord, type PipeOptions } from "../src/streams/testing/topology-test-driver";
export { TestDriver, type TestInput, type TestOutput } from "../platform/testing/test-driver";
