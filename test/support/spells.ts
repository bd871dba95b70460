/** A spell of input for task 0_0 of the orders example, processed until the application is quiet. */
import type { TestDriver } from "../../platform/testing/test-driver";
import { keysOn } from "./keys";

/** Two orders on partition 0 (keys `<prefix>-…`), then every task run until quiet. */
export async function quietSpell(driver: TestDriver, prefix: string): Promise<void> {
  await driver.pipe(
    "orders",
    keysOn(0, 2, prefix).map((key) => ({ key, value: { amount: 1 } })),
  );
  await driver.runUntilQuiet();
}
