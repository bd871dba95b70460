/**
 * A test application for `TestDriver`'s reads: readings grouped by a composite key (a JSON
 * `SensorKey`, so a store key is not the key as written) and counted in a key-value store, in
 * one-minute windows and in sessions, kept for queries longer than they stay open. Built from the
 * public API only.
 */
import { Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows, type Topology } from "edge-streams";

export interface Reading {
  readonly site: string;
  readonly sensor: number;
}

/** What the stores are keyed by: written as JSON, so `{ site: "eu", sensor: 7 }` is stored as `{"site":"eu","sensor":7}`. */
export interface SensorKey {
  readonly site: string;
  readonly sensor: number;
}

export const DRIVERS_TOPICS = { readings: 2 } as const;
export const WINDOW_MS = 60_000;
export const SESSION_GAP_MS = 30_000;
/** Windows and sessions stay queryable this long (by default only while they can still change). */
export const RETENTION_MS = 10 * WINDOW_MS;

export function driversTopology(): Topology {
  const builder = new StreamsBuilder();
  const bySensor = builder
    .stream("readings", { key: Serdes.string(), value: Serdes.json<Reading>() })
    .groupBy((_device, reading): SensorKey => ({ site: reading.site, sensor: reading.sensor }), {
      key: Serdes.json<SensorKey>(),
      value: Serdes.json<Reading>(),
      name: "by-sensor",
    });
  bySensor.count(Materialized.as("readings-per-sensor", { caching: false }));
  bySensor.windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW_MS)).count(Materialized.as("readings-per-minute", { retentionMs: RETENTION_MS }));
  bySensor.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(SESSION_GAP_MS)).count(Materialized.as("reading-sessions", { retentionMs: RETENTION_MS }));
  return builder.build({ applicationId: "drivers", topics: DRIVERS_TOPICS });
}
