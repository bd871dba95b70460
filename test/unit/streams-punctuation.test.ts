import { describe, expect, it } from "vitest";
import {
  changelogTopicName,
  createTaskProcessor,
  DEAD_LETTER_HEADERS,
  InMemoryStoreBackend,
  positionFromHeaders,
  ProcessingError,
  Serdes,
  StreamsBuilder,
  TopologyTestDriver,
  type BuildOptions,
  type OutgoingRecord,
  type ProcessorContext,
  type PunctuationType,
} from "../../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };

/**
 * Counts records in store `pending`; every `interval` of `type` time a punctuator forwards the
 * total so far (keyed "total", with the punctuation's time) and clears the store.
 */
function countingTopology(type: PunctuationType, interval: number, seen: number[] = [], options: Partial<BuildOptions> = {}) {
  const builder = new StreamsBuilder().addStateStore("pending", { key: Serdes.string(), value: Serdes.number() });
  builder
    .stream("in", str)
    .process<string, number>(() => {
      let context: ProcessorContext<string, number>;
      return {
        init: (c) => {
          context = c;
          c.schedule(interval, type, (time) => {
            seen.push(time);
            const store = c.getStateStore<string, number>("pending");
            const total = store.get("n") ?? 0;
            store.delete("n");
            c.forward({ key: "total", value: total, timestamp: time, headers: [] });
          });
        },
        process: () => {
          const store = context.getStateStore<string, number>("pending");
          store.put("n", (store.get("n") ?? 0) + 1);
        },
      };
    }, "pending")
    .to("out", { key: Serdes.string(), value: Serdes.number() });
  return builder.build({ applicationId: "p", topics: { in: 1, out: 1 }, ...options });
}

const totals = (driver: TopologyTestDriver) => driver.records("out").map((r) => [Number(r.value), r.timestamp]);

describe("stream-time punctuation", () => {
  it("runs after the record that moves stream time past each multiple of the interval, once per gap", () => {
    const seen: number[] = [];
    const driver = new TopologyTestDriver(countingTopology("stream-time", 10, seen));
    for (const timestamp of [3, 7, 12, 9, 35, 36]) driver.pipe("in", "k", "v", { timestamp });
    // 3 passes 0 (the first record), 12 passes 10, 35 passes 20 and 30 (one call); 9 is out of order.
    expect(seen).toEqual([3, 12, 35]);
    expect(totals(driver)).toEqual([
      [1, 3],
      [2, 12],
      [2, 35],
    ]);
    expect(driver.tasks.get("0_0")!.eventMetrics.punctuations).toBe(3);
    // Its store writes happen while processing a record, so they name that record's position.
    const deletes = driver.records(changelogTopicName("p", "pending")).filter((r) => r.value === null);
    expect(deletes.map((r) => positionFromHeaders(r.headers)?.offset)).toEqual([0, 2, 4]);
  });
});

describe("wall-clock punctuation", () => {
  it("runs when the task is punctuated at or after its time, once however late, and says when it is next due", () => {
    const seen: number[] = [];
    const driver = new TopologyTestDriver(countingTopology("wall-clock", 1000, seen));
    const task = driver.tasks.get("0_0")!;
    expect(task.nextWallClockPunctuationMs()).toBe(1000);
    driver.pipe("in", "k", "v");
    driver.advanceWallClockTime(999);
    expect(seen).toEqual([]);
    driver.advanceWallClockTime(1);
    expect(seen).toEqual([1000]);
    expect(task.nextWallClockPunctuationMs()).toBe(2000);
    driver.pipe("in", "k", "v");
    driver.pipe("in", "k", "v");
    driver.advanceWallClockTime(2500);
    expect(seen).toEqual([1000, 3500]);
    expect(task.nextWallClockPunctuationMs()).toBe(4000);
    expect(totals(driver)).toEqual([
      [1, 1000],
      [2, 3500],
    ]);
    // Writes made in a wall-clock punctuation carry its time and no input position.
    const last = driver.records(changelogTopicName("p", "pending")).at(-1)!;
    expect(last).toMatchObject({ key: "n", value: null, timestamp: 3500, headers: [] });
  });

  it("lets one alarm serve every schedule of a task: arm it for the earliest, punctuate, re-arm", () => {
    const fired: string[] = [];
    const builder = new StreamsBuilder();
    builder.stream("in", str).process(() => ({
      init: (c) => {
        c.schedule(300, "wall-clock", (t) => fired.push(`A@${t}`));
        c.schedule(700, "wall-clock", (t) => fired.push(`B@${t}`));
      },
      process: () => {},
    }));
    const topology = builder.build({ applicationId: "alarm", topics: { in: 1 } });
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: { send: () => {} }, clock: () => 0 });
    // What the Durable Object does: its alarm is always set for nextWallClockPunctuationMs().
    const alarms: number[] = [];
    for (let alarm = task.nextWallClockPunctuationMs(); alarm !== undefined && alarm <= 1500; alarm = task.nextWallClockPunctuationMs()) {
      alarms.push(alarm);
      task.punctuate(alarm);
    }
    expect(alarms).toEqual([300, 600, 700, 900, 1200, 1400, 1500]);
    expect(fired).toEqual(["A@300", "A@600", "B@700", "A@900", "A@1200", "B@1400", "A@1500"]);
    task.punctuate(1450); // an early or repeated alarm runs nothing
    expect(fired).toHaveLength(7);
  });

  it("stops a schedule that is cancelled, even from its own punctuator", () => {
    const seen: number[] = [];
    const builder = new StreamsBuilder();
    builder.stream("in", str).process(() => ({
      init: (c) => {
        const schedule = c.schedule(100, "wall-clock", (t) => {
          seen.push(t);
          if (seen.length === 2) schedule.cancel();
        });
      },
      process: () => {},
    }));
    const driver = new TopologyTestDriver(builder.build({ applicationId: "c", topics: { in: 1 } }));
    for (let i = 0; i < 5; i++) driver.advanceWallClockTime(100);
    expect(seen).toEqual([100, 200]);
    expect(driver.tasks.get("0_0")!.nextWallClockPunctuationMs()).toBeUndefined();
  });
});

describe("punctuator errors", () => {
  function failing(options: Partial<BuildOptions>) {
    const builder = new StreamsBuilder();
    const ran: number[] = [];
    builder.stream("in", str).process(() => ({
      init: (c) => {
        c.schedule(10, "wall-clock", () => {
          throw new Error("boom");
        });
        c.schedule(10, "wall-clock", (t) => ran.push(t));
      },
      process: () => {},
    }));
    const sent: OutgoingRecord[] = [];
    const topology = builder.build({ applicationId: "e", topics: { in: 1, dlq: 1 }, ...options });
    const task = createTaskProcessor(topology, "0_0", { stores: new InMemoryStoreBackend(), collector: { send: (r) => void sent.push(r) }, clock: () => 0 });
    return { task, ran, sent };
  }

  it('are processing errors: "fail" throws ProcessingError out of punctuate()', () => {
    const { task } = failing({});
    expect(() => task.punctuate(10)).toThrow(ProcessingError);
    expect(() => failing({}).task.punctuate(10)).toThrow(/KSTREAM-PROCESSOR-\d+ failed in a wall-clock punctuation: boom/);
  });

  it('"continue" counts the error and runs the other punctuators; a dead letter topic gets the error without a record', () => {
    const continuing = failing({ onProcessingError: "continue" });
    continuing.task.punctuate(10);
    expect(continuing.ran).toEqual([10]);
    expect(continuing.task.eventMetrics).toMatchObject({ processingErrorsContinued: 1, punctuations: 2 });

    const dead = failing({ onProcessingError: { deadLetterTopic: "dlq" } });
    dead.task.punctuate(10);
    expect(dead.sent).toEqual([
      {
        topic: "dlq",
        key: null,
        value: null,
        timestamp: 10,
        // Kafka's error headers; without a source record, its topic is empty and its place -1.
        headers: [
          { key: DEAD_LETTER_HEADERS.exception, value: "Error" },
          { key: DEAD_LETTER_HEADERS.message, value: "boom" },
          { key: DEAD_LETTER_HEADERS.stacktrace, value: expect.stringMatching(/^Error: boom\n/) },
          { key: DEAD_LETTER_HEADERS.topic, value: "" },
          { key: DEAD_LETTER_HEADERS.partition, value: "-1" },
          { key: DEAD_LETTER_HEADERS.offset, value: "-1" },
        ],
      },
    ]);
    expect(dead.task.eventMetrics.processingErrorsDeadLettered).toBe(1);
  });
});

describe("window stores in the Processor API", () => {
  it("hold values per key and window; a wall-clock punctuator can read and clear them", () => {
    const builder = new StreamsBuilder().addWindowStore("per-second", { key: Serdes.string(), value: Serdes.number() });
    builder
      .stream("in", str)
      .process<string, string>(() => {
        let context: ProcessorContext<string, string>;
        return {
          init: (c) => {
            context = c;
            c.schedule(5000, "wall-clock", () => {
              const store = c.getWindowStore<string, number>("per-second");
              for (const { window, value } of store.fetch("k", 0, Number.MAX_SAFE_INTEGER)) {
                c.forward({ key: "k", value: `${window.start}-${window.end}:${value}`, timestamp: window.end, headers: [] });
                store.delete("k", window);
              }
            });
          },
          process: (record) => {
            const store = context.getWindowStore<string, number>("per-second");
            const start = Math.floor(record.timestamp / 1000) * 1000;
            store.put(record.key, { start, end: start + 1000 }, (store.get(record.key, start) ?? 0) + 1);
          },
        };
      }, "per-second")
      .to("out");
    const driver = new TopologyTestDriver(builder.build({ applicationId: "w", topics: { in: 1, out: 1 } }));
    for (const timestamp of [100, 900, 1500, 2999]) driver.pipe("in", "k", "v", { timestamp });
    expect(driver.windows("per-second", "k")).toEqual([
      { window: { start: 0, end: 1000 }, value: 2 },
      { window: { start: 1000, end: 2000 }, value: 1 },
      { window: { start: 2000, end: 3000 }, value: 1 },
    ]);
    driver.advanceWallClockTime(5000);
    expect(driver.records("out").map((r) => JSON.parse(r.value!))).toEqual(["0-1000:2", "1000-2000:1", "2000-3000:1"]);
    expect(driver.windows("per-second", "k")).toEqual([]);
  });
});
