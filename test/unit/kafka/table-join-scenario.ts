/**
 * The scenario Kafka's KTableKTable{Inner,Left,Outer}JoinTest share: eight steps of updates to the
 * two tables (keys 0–3, values X…/Y…, deletes), each followed by the results Kafka expects.
 */
import { expect } from "vitest";
import { TopologyTestDriver, type Topology } from "../../../src/streams";
import { INTEGER, STRING, TestInputTopic, TestOutputTopic, type KeyValueTimestamp, type MockApiProcessorSupplier } from "./support";

export type Expected = KeyValueTimestamp<number, string | null>[];

/** Runs the steps, calling `check` with each step's number (1–8) after it. */
export function runTableJoinScenario(topology: Topology, check: (step: number, driver: TopologyTestDriver) => void): TopologyTestDriver {
  const driver = new TopologyTestDriver(topology);
  const inputTopic1 = new TestInputTopic(driver, "topic1", INTEGER, STRING, 0, 0);
  const inputTopic2 = new TestInputTopic(driver, "topic2", INTEGER, STRING, 0, 0);
  const expectedKeys = [0, 1, 2, 3];
  // push two items to the primary stream. the other table is empty
  for (let i = 0; i < 2; i++) inputTopic1.pipeInput(expectedKeys[i]!, `X${expectedKeys[i]}`, 5 + i);
  // pass tuple with null key, it will be discarded in join process
  inputTopic1.pipeInput(null, "SomeVal", 42);
  check(1, driver);
  // push two items to the other stream. this should produce two items.
  for (let i = 0; i < 2; i++) inputTopic2.pipeInput(expectedKeys[i]!, `Y${expectedKeys[i]}`, 10 * i);
  // pass tuple with null key, it will be discarded in join process
  inputTopic2.pipeInput(null, "AnotherVal", 73);
  check(2, driver);
  // push all four items to the primary stream.
  for (const expectedKey of expectedKeys) inputTopic1.pipeInput(expectedKey, `XX${expectedKey}`, 7);
  check(3, driver);
  // push all items to the other stream.
  for (const expectedKey of expectedKeys) inputTopic2.pipeInput(expectedKey, `YY${expectedKey}`, expectedKey * 5);
  check(4, driver);
  // push all four items to the primary stream.
  for (const expectedKey of expectedKeys) inputTopic1.pipeInput(expectedKey, `XXX${expectedKey}`, 6);
  check(5, driver);
  // push two items with null to the other stream as deletes.
  inputTopic2.pipeInput(expectedKeys[0]!, null, 5);
  inputTopic2.pipeInput(expectedKeys[1]!, null, 7);
  check(6, driver);
  // push all four items to the primary stream.
  for (const expectedKey of expectedKeys) inputTopic1.pipeInput(expectedKey, `XXXX${expectedKey}`, 13);
  check(7, driver);
  // push four items to the primary stream with null.
  inputTopic1.pipeInput(expectedKeys[0]!, null, 0);
  inputTopic1.pipeInput(expectedKeys[1]!, null, 42);
  inputTopic1.pipeInput(expectedKeys[2]!, null, 5);
  inputTopic1.pipeInput(expectedKeys[3]!, null, 20);
  check(8, driver);
  return driver;
}

/** Checks what `supplier` received after each step against `expected` (new values, or changes). */
export function checkProcessedAfterEachStep<V>(
  topology: Topology,
  supplier: MockApiProcessorSupplier<number, V>,
  expected: Record<number, KeyValueTimestamp<number, V>[]>,
): void {
  runTableJoinScenario(topology, (step) => expect({ step, processed: supplier.processed.splice(0) }).toEqual({ step, processed: expected[step] }));
}

/** Checks the `output` topic after each step against `expected`, and that nothing more came. */
export function checkOutputAfterEachStep(topology: Topology, expected: Record<number, Expected>): void {
  let output: TestOutputTopic<number, string> | undefined;
  runTableJoinScenario(topology, (step, driver) => {
    output ??= new TestOutputTopic(driver, "output", INTEGER, STRING);
    expect({ step, output: output.readRecordsToList() }).toEqual({ step, output: expected[step] });
  });
}
