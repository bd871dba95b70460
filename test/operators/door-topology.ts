/**
 * The part of the operators test application that tests the door (test/operators/door.test.ts):
 * topics read with each built-in serde, so that what HTTP ingest, `TestDriver.pipe` and
 * `TopologyTestDriver.pipeInput` store can be compared byte for byte. `notes` (string keys and
 * values) is kept as a table in store `latest-note`; `scores` (string keys, number values) summed
 * per key and minute in window store `score-sums`, the only store of its tasks (so a test can hold
 * its restoration part-way, batch by batch); `tags` (JSON keys and values, the default serdes) kept as a table in
 * `tags`, a store whose keys are JSON (`"NL"`, read back as `/keys/NL`).
 */
import { Materialized, Serdes, TimeWindows, type StreamsBuilder } from "edge-streams";

export const DOOR_TOPICS = { notes: 2, scores: 2, tags: 2 } as const;
export const MINUTE_MS = 60_000;

const str = Serdes.string();

export function addDoorTopics(builder: StreamsBuilder): void {
  builder.stream("notes", { key: str, value: str }).toTable(Materialized.as("latest-note", { key: str, value: str }));
  builder
    .stream("scores", { key: str, value: Serdes.number() })
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(MINUTE_MS))
    .reduce((sum, score) => sum + score, Materialized.as("score-sums", { key: str, value: Serdes.number() }));
  builder.stream<string, { color: string }>("tags").toTable(Materialized.as("tags"));
}
