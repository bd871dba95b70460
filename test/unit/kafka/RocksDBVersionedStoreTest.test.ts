/**
 * Ported from Kafka Streams' RocksDBVersionedStoreTest: the versioned key-value store's puts (latest,
 * older, tombstones, repeated timestamps), deletes, reads as of a time, and history retention
 * (writes older than it are not taken; reads older than it answer nothing unless the latest record
 * is valid then). Edge Streams keeps versions per key rather than in time segments, so the tests
 * named after segments exercise the same version chains; their expectations are unchanged. The
 * `shouldRestore*` tests give the store the records Kafka restores from its changelog, in order:
 * Kafka restores a versioned store by replaying its puts, and this store's changelog holds its raw
 * writes, whose replay is the generic restore (tested in streams-versioned-table.test.ts).
 * Not ported: the `get(key, from, to, order)` range queries (KIP-968 interactive queries) and the
 * expired-record sensor (a write too old is refused; the table source counts it as dropped).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { InMemoryKeyValueStore, Serdes } from "../../../src/streams";
import {
  PUT_RETURN_CODE_NOT_PUT,
  PUT_RETURN_CODE_VALID_TO_UNDEFINED,
  RawVersionedStore,
  VersionedKeyValueStore,
} from "../../../src/streams/state/versioned-store";

const HISTORY_RETENTION = 300_000;
const GRACE_PERIOD = HISTORY_RETENTION; // history retention doubles as grace period for now
const SEGMENT_INTERVAL = HISTORY_RETENTION / 3;
const BASE_TIMESTAMP = 10;

let store: VersionedKeyValueStore<string, string>;

function createStore(historyRetention = HISTORY_RETENTION) {
  store = new VersionedKeyValueStore(
    "myversionedrocks",
    new RawVersionedStore(new InMemoryKeyValueStore(), new InMemoryKeyValueStore(), historyRetention),
    Serdes.string(),
    Serdes.string(),
  );
}

function putToStore(key: string, value: string | null, timestamp: number, expectedValidTo: number) {
  expect(store.put(key, value, timestamp)).toBe(expectedValidTo);
}

const deleteFromStore = (key: string, timestamp: number) => store.delete(key, timestamp);

function verifyGetValueFromStore(key: string, expectedValue: string, expectedTimestamp: number) {
  expect(store.get(key)).toEqual({ value: expectedValue, timestamp: expectedTimestamp });
}

function verifyGetNullFromStore(key: string) {
  expect(store.get(key)).toBeUndefined();
}

function verifyTimestampedGetValueFromStore(key: string, timestamp: number, expectedValue: string, expectedTimestamp: number, expectedValidTo: number) {
  const record = store.getAsOf(key, timestamp);
  expect(record).toEqual(
    expectedValidTo === PUT_RETURN_CODE_VALID_TO_UNDEFINED
      ? { value: expectedValue, timestamp: expectedTimestamp }
      : { value: expectedValue, timestamp: expectedTimestamp, validTo: expectedValidTo },
  );
}

function verifyTimestampedGetNullFromStore(key: string, timestamp: number) {
  expect(store.getAsOf(key, timestamp)).toBeUndefined();
}

/** Kafka's `store.restoreBatch(records)`: the changelog's records, in order, as puts. */
function restoreBatch(records: [string, string | null, number][]) {
  for (const [key, value, timestamp] of records) store.put(key, value, timestamp);
}

describe("RocksDBVersionedStoreTest", () => {
  beforeEach(() => createStore());

  it("shouldPutLatest", () => {
    putToStore("k", "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "v2", BASE_TIMESTAMP + 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetValueFromStore("k", "v2", BASE_TIMESTAMP + 1);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "v", BASE_TIMESTAMP, BASE_TIMESTAMP + 1);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP + 1, "v2", BASE_TIMESTAMP + 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP + 2, "v2", BASE_TIMESTAMP + 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
  });

  it("shouldPutNullAsLatest", () => {
    putToStore("k", null, BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, BASE_TIMESTAMP + 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP + 1);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP + 2);
  });

  it("shouldPutOlderWithNonNullLatest", () => {
    putToStore("k", "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "v2", BASE_TIMESTAMP - 2, BASE_TIMESTAMP);
    putToStore("k", "v1", BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    putToStore("k", "v4", BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);

    verifyGetValueFromStore("k", "v", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 1, "v1", BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 2, "v2", BASE_TIMESTAMP - 2, BASE_TIMESTAMP - 1);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 3, "v4", BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);
  });

  it("shouldPutOlderWithNullLatest", () => {
    putToStore("k", null, BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "v2", BASE_TIMESTAMP - 2, BASE_TIMESTAMP);
    putToStore("k", "v1", BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    putToStore("k", "v4", BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 1, "v1", BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 2, "v2", BASE_TIMESTAMP - 2, BASE_TIMESTAMP - 1);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 3, "v4", BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);
  });

  it("shouldPutOlderNullWithNonNullLatest", () => {
    putToStore("k", "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, BASE_TIMESTAMP - 2, BASE_TIMESTAMP);
    putToStore("k", null, BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    putToStore("k", null, BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);
    putToStore("k", "v5", BASE_TIMESTAMP - 5, BASE_TIMESTAMP - 4);
    putToStore("k", "v3", BASE_TIMESTAMP - 3, BASE_TIMESTAMP - 2);
    putToStore("k", null, BASE_TIMESTAMP - 6, BASE_TIMESTAMP - 5);

    verifyGetValueFromStore("k", "v", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 2);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 3, "v3", BASE_TIMESTAMP - 3, BASE_TIMESTAMP - 2);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 4);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 5, "v5", BASE_TIMESTAMP - 5, BASE_TIMESTAMP - 4);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 6);
  });

  it("shouldPutOlderNullWithNullLatest", () => {
    putToStore("k", null, BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, BASE_TIMESTAMP - 2, BASE_TIMESTAMP);
    putToStore("k", null, BASE_TIMESTAMP - 1, BASE_TIMESTAMP);
    putToStore("k", null, BASE_TIMESTAMP - 4, BASE_TIMESTAMP - 2);
    putToStore("k", "v3", BASE_TIMESTAMP - 3, BASE_TIMESTAMP - 2);
    putToStore("k", "v5", BASE_TIMESTAMP - 5, BASE_TIMESTAMP - 4);
    putToStore("k", null, BASE_TIMESTAMP - 6, BASE_TIMESTAMP - 5);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 2);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 3, "v3", BASE_TIMESTAMP - 3, BASE_TIMESTAMP - 2);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 4);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP - 5, "v5", BASE_TIMESTAMP - 5, BASE_TIMESTAMP - 4);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 6);
  });

  it("shouldPutRepeatTimestampAsLatest", () => {
    putToStore("k", "to_be_replaced", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "b", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetValueFromStore("k", "b", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "b", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);

    putToStore("k", null, BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);

    putToStore("k", null, BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);

    putToStore("k", "b", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetValueFromStore("k", "b", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "b", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP - 1);
  });

  it("shouldPutRepeatTimestamps", () => {
    putToStore("k", "to_be_replaced", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 20);
    putToStore("k", "to_be_replaced", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 20); // replace existing null with non-null, with timestamps spanning segments
    putToStore("k", null, SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 20); // replace existing non-null with null
    putToStore("k", "to_be_replaced", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 20);
    putToStore("k", "to_be_replaced", SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 20);
    putToStore("k", null, SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 1); // replace existing non-null with null
    putToStore("k", null, SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 20); // replace existing non-null with null, with timestamps spanning segments
    putToStore("k", null, SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    putToStore("k", null, SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    putToStore("k", "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10); // replace existing null with non-null
    putToStore("k", "to_be_replaced", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    putToStore("k", "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1); // replace existing non-null with non-null
    putToStore("k", null, SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED); // replace existing non-null (latest value) with null
    putToStore("k", null, SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED); // replace existing null with null
    putToStore("k", "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 15);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 6, "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 6, "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 8);
  });

  it("shouldPutIntoMultipleSegments", () => {
    putToStore("k", null, SEGMENT_INTERVAL - 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "vn10", SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL - 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL + 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "vp10", SEGMENT_INTERVAL + 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 15, "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 15);
  });

  it("shouldMoveRecordToOlderSegmentDuringPut", () => {
    putToStore("k", "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    putToStore("k", "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 10);
    putToStore("k", "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL + 10);
    putToStore("k", "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 10);
    putToStore("k", "vp1", SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 10);

    verifyGetValueFromStore("k", "vp20", SEGMENT_INTERVAL + 20);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 30, "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 15, "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 5, "vp1", SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 1, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 2, "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL - 2);
  });

  it("shouldMoveRecordToOlderSegmentWithNullsDuringPut", () => {
    putToStore("k", null, SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 20);
    putToStore("k", null, SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 20);
    putToStore("k", null, SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL - 1);
    putToStore("k", null, SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    putToStore("k", "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    putToStore("k", "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    putToStore("k", "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 15);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 6, "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 6, "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 8);
  });

  it("shouldFallThroughToExistingOlderSegmentAsLatestDuringPut", () => {
    putToStore("k", null, SEGMENT_INTERVAL - 5, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
    putToStore("k", "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    putToStore("k", null, SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 10);
    putToStore("k", "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL - 1);

    verifyGetValueFromStore("k", "vp20", SEGMENT_INTERVAL + 20);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 30, "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 12);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 2, "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 5);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 6, "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
  });

  it("shouldPutNonLatestTombstoneIntoNewSegmentWithValidTo", () => {
    putToStore("k", "vp30", SEGMENT_INTERVAL + 30, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 30); // this put should result in tombstone with validTo=SEGMENT_INTERVAL+30
    putToStore("k", "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL + 30);
    putToStore("k", "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 30);
    putToStore("k", null, SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL - 1);

    verifyGetValueFromStore("k", "vp30", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 10, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 1, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 30);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 2);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 10);
  });

  it("shouldDelete", () => {
    putToStore("k", "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    putToStore("k", "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL + 10);
    putToStore("k", "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL + 10);

    let deleted = deleteFromStore("k", SEGMENT_INTERVAL - 5); // delete from segment
    expect(deleted!.value).toBe("vn10");
    expect(deleted!.timestamp).toBe(SEGMENT_INTERVAL - 10);

    deleted = deleteFromStore("k", SEGMENT_INTERVAL + 10); // delete existing timestamp
    expect(deleted!.value).toBe("vp10");
    expect(deleted!.timestamp).toBe(SEGMENT_INTERVAL + 10);

    deleted = deleteFromStore("k", SEGMENT_INTERVAL + 10); // delete the same timestamp again
    expect(deleted).toBeUndefined();

    deleted = deleteFromStore("k", SEGMENT_INTERVAL + 25); // delete from latest value store
    expect(deleted!.value).toBe("vp20");
    expect(deleted!.timestamp).toBe(SEGMENT_INTERVAL + 20);
  });

  it("shouldNotPutExpired", () => {
    putToStore("k", "v", HISTORY_RETENTION + 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // grace period has not elapsed
    putToStore("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyGetValueFromStore("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD);

    // grace period has elapsed, so this put does not take place
    putToStore("k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD, PUT_RETURN_CODE_NOT_PUT);
    verifyGetNullFromStore("k2");
  });

  it("shouldNotDeleteExpired", () => {
    putToStore("k1", "v1", 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k2", "v2", 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("kother", "vother", HISTORY_RETENTION + 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED); // use separate key to advance stream time

    // grace period has not elapsed
    let deleted = deleteFromStore("k1", HISTORY_RETENTION + 10 - GRACE_PERIOD);
    expect(deleted!.value).toBe("v1");
    expect(deleted!.timestamp).toBe(1);
    verifyGetNullFromStore("k1");

    // grace period has elapsed, so this delete does not take place
    deleted = deleteFromStore("k2", HISTORY_RETENTION + 9 - GRACE_PERIOD);
    expect(deleted).toBeUndefined(); // return value is null even though record exists because delete did not take place
    verifyGetValueFromStore("k2", "v2", 1);
  });

  it("shouldGetFromOlderSegments", () => {
    // use a different key to create three different segments
    putToStore("ko", null, SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("ko", null, 2 * SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("ko", null, 3 * SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // return null after visiting all segments
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 20);

    // insert data to create non-empty (first) segment
    putToStore("k", "v", SEGMENT_INTERVAL - 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 15, "v", SEGMENT_INTERVAL - 20, SEGMENT_INTERVAL - 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 5);

    // insert data to create non-empty (third) segment
    putToStore("k", "v2", 3 * SEGMENT_INTERVAL - 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", null, 3 * SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // presence of non-empty later segment does not affect results of getting from earlier segment
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 15, "v", SEGMENT_INTERVAL - 20, SEGMENT_INTERVAL - 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 5);
  });

  it("shouldNotGetExpired", () => {
    putToStore("k", "v_old", 0, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("k", "v", SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // old record has not yet expired
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 11, "v_old", 0, SEGMENT_INTERVAL - 10);

    putToStore("ko", "vo", HISTORY_RETENTION + SEGMENT_INTERVAL - 11, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // old record still has not yet expired
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 11, "v_old", 0, SEGMENT_INTERVAL - 10);

    putToStore("ko", "vo2", HISTORY_RETENTION + SEGMENT_INTERVAL - 10, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // old record is expired now
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 11);
  });

  it("shouldGetExpiredIfLatestValue", () => {
    putToStore("k", "v", 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("ko", "vo_old", 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    putToStore("ko", "vo_new", HISTORY_RETENTION + 12, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // expired get on key where latest satisfies timestamp bound still returns data
    verifyTimestampedGetValueFromStore("k", 10, "v", 1, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // same expired get on key where latest value does not satisfy timestamp bound does not return data
    verifyTimestampedGetNullFromStore("ko", 10);
  });

  it("shouldRestore", () => {
    restoreBatch([
      ["k", "vp20", SEGMENT_INTERVAL + 20],
      ["k", "vp10", SEGMENT_INTERVAL + 10],
      ["k", "vn10", SEGMENT_INTERVAL - 10],
      ["k", "vn2", SEGMENT_INTERVAL - 2],
      ["k", "vn1", SEGMENT_INTERVAL - 1],
      ["k", "vp1", SEGMENT_INTERVAL + 1],
    ]);

    verifyGetValueFromStore("k", "vp20", SEGMENT_INTERVAL + 20);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 30, "vp20", SEGMENT_INTERVAL + 20, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 15, "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 5, "vp1", SEGMENT_INTERVAL + 1, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 1, "vn1", SEGMENT_INTERVAL - 1, SEGMENT_INTERVAL + 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 2, "vn2", SEGMENT_INTERVAL - 2, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL - 2);
  });

  it("shouldRestoreWithNulls", () => {
    restoreBatch([
      ["k", null, SEGMENT_INTERVAL + 20],
      ["k", null, SEGMENT_INTERVAL - 1],
      ["k", null, SEGMENT_INTERVAL + 1],
      ["k", null, SEGMENT_INTERVAL - 10],
      ["k", null, SEGMENT_INTERVAL + 10],
      ["k", "vp5", SEGMENT_INTERVAL + 5],
      ["k", "vn5", SEGMENT_INTERVAL - 5],
      ["k", "vn6", SEGMENT_INTERVAL - 6],
    ]);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 15);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 6, "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 6, "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 8);
  });

  it("shouldRestoreWithNullsAndRepeatTimestamps", () => {
    restoreBatch([
      ["k", "to_be_replaced", SEGMENT_INTERVAL + 20],
      ["k", null, SEGMENT_INTERVAL - 10],
      ["k", "to_be_replaced", SEGMENT_INTERVAL - 10], // replaces existing null with non-null, with timestamps spanning segments
      ["k", null, SEGMENT_INTERVAL - 10], // replaces existing non-null with null
      ["k", "to_be_replaced", SEGMENT_INTERVAL - 1],
      ["k", "to_be_replaced", SEGMENT_INTERVAL + 1],
      ["k", null, SEGMENT_INTERVAL - 1], // replaces existing non-null with null
      ["k", null, SEGMENT_INTERVAL + 1], // replaces existing non-null with null, with timestamps spanning segments
      ["k", null, SEGMENT_INTERVAL + 10],
      ["k", null, SEGMENT_INTERVAL + 5],
      ["k", "vp5", SEGMENT_INTERVAL + 5], // replaces existing null with non-null
      ["k", "to_be_replaced", SEGMENT_INTERVAL - 5],
      ["k", "vn5", SEGMENT_INTERVAL - 5], // replaces existing non-null with non-null
      ["k", null, SEGMENT_INTERVAL + 20], // replaces existing non-null (latest value) with null
      ["k", null, SEGMENT_INTERVAL + 20], // replaces existing null with null
      ["k", "vn6", SEGMENT_INTERVAL - 6],
    ]);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 15);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 6, "vp5", SEGMENT_INTERVAL + 5, SEGMENT_INTERVAL + 10);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn5", SEGMENT_INTERVAL - 5, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 6, "vn6", SEGMENT_INTERVAL - 6, SEGMENT_INTERVAL - 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 8);
  });

  it("shouldRestoreMultipleBatches", () => {
    restoreBatch([
      ["k", null, SEGMENT_INTERVAL - 20],
      ["k", "vn10", SEGMENT_INTERVAL - 10],
      ["k", null, SEGMENT_INTERVAL - 1],
    ]);
    restoreBatch([
      ["k", null, SEGMENT_INTERVAL + 1],
      ["k", "vp10", SEGMENT_INTERVAL + 10],
      ["k", null, SEGMENT_INTERVAL + 20],
    ]);

    verifyGetNullFromStore("k");
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 30);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL + 15, "vp10", SEGMENT_INTERVAL + 10, SEGMENT_INTERVAL + 20);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 5);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL + 2);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 1);
    verifyTimestampedGetValueFromStore("k", SEGMENT_INTERVAL - 5, "vn10", SEGMENT_INTERVAL - 10, SEGMENT_INTERVAL - 1);
    verifyTimestampedGetNullFromStore("k", SEGMENT_INTERVAL - 15);
  });

  it("shouldNotRestoreExpired", () => {
    restoreBatch([
      ["k", "v", HISTORY_RETENTION + 10],
      ["k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD], // grace period has not elapsed
      ["k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD], // grace period has elapsed, so this record should not be restored
    ]);

    verifyGetValueFromStore("k", "v", HISTORY_RETENTION + 10);
    verifyGetValueFromStore("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD);
    verifyGetNullFromStore("k2");
  });

  it("shouldRestoreEvenIfRecordWouldBeExpiredByEndOfBatch", () => {
    restoreBatch([
      ["k2", "v2", HISTORY_RETENTION - GRACE_PERIOD], // this record will be older than grace period by the end of the batch, but should still be restored
      ["k", "v", HISTORY_RETENTION + 10],
    ]);

    verifyGetValueFromStore("k2", "v2", HISTORY_RETENTION - GRACE_PERIOD);
    verifyGetValueFromStore("k", "v", HISTORY_RETENTION + 10);
  });

  it("shouldAllowZeroHistoryRetention", () => {
    // recreate store with zero history retention
    createStore(0);

    // put and get
    putToStore("k", "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyGetValueFromStore("k", "v", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP + 1, "v", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED); // query in "future" is allowed

    // update existing record at same timestamp
    putToStore("k", "updated", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyGetValueFromStore("k", "updated", BASE_TIMESTAMP);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP, "updated", BASE_TIMESTAMP, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // put new record version
    putToStore("k", "v2", BASE_TIMESTAMP + 2, PUT_RETURN_CODE_VALID_TO_UNDEFINED);
    verifyGetValueFromStore("k", "v2", BASE_TIMESTAMP + 2);
    verifyTimestampedGetValueFromStore("k", BASE_TIMESTAMP + 2, "v2", BASE_TIMESTAMP + 2, PUT_RETURN_CODE_VALID_TO_UNDEFINED);

    // query in past (history retention expired) returns null
    verifyTimestampedGetNullFromStore("k", BASE_TIMESTAMP + 1);

    // delete existing key
    deleteFromStore("k", BASE_TIMESTAMP + 3);
    verifyGetNullFromStore("k");

    // put in past (grace period expired) does not update the store
    putToStore("k2", "v", BASE_TIMESTAMP + 2, PUT_RETURN_CODE_NOT_PUT);
    verifyGetNullFromStore("k2");
  });
});
