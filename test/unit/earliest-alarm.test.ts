/**
 * EarliestAlarm: the alarm is armed at the earliest time asked for, and asking for a later time
 * costs no storage operation (the time armed is kept in memory after one read).
 */
import { describe, expect, it } from "vitest";
import { EarliestAlarm } from "../../src/util/alarm";

/** A storage's alarm, counting the operations made on it. */
function fakeStorage(initial: number | null = null, failSets = 0) {
  const calls = { get: 0, set: 0, delete: 0 };
  let alarm = initial;
  let failures = failSets;
  const storage = {
    getAlarm: async () => {
      calls.get++;
      return alarm;
    },
    setAlarm: async (at: number | Date) => {
      calls.set++;
      if (failures-- > 0) throw new Error("storage failed");
      alarm = Number(at);
    },
    deleteAlarm: async () => {
      calls.delete++;
      alarm = null;
    },
  };
  return { storage: storage as unknown as DurableObjectStorage, calls, alarm: () => alarm };
}

describe("EarliestAlarm", () => {
  it("reads the stored alarm once, arms only sooner times, and after it fired arms again", async () => {
    const { storage, calls, alarm } = fakeStorage(500);
    const alarms = new EarliestAlarm(storage);
    await alarms.armBy(800);
    expect(alarm()).toBe(500);
    await alarms.armBy(300);
    await alarms.armBy(400);
    await alarms.armBy(300);
    expect(alarm()).toBe(300);
    expect(calls).toEqual({ get: 1, set: 1, delete: 0 });
    alarms.fired();
    await alarms.armBy(900);
    expect(alarm()).toBe(900);
    expect(calls).toEqual({ get: 1, set: 2, delete: 0 });
  });

  it("`set` arms whatever was armed, `delete` leaves nothing armed", async () => {
    const { storage, calls, alarm } = fakeStorage();
    const alarms = new EarliestAlarm(storage);
    await alarms.armBy(100);
    await alarms.set(700);
    expect(alarm()).toBe(700);
    await alarms.delete();
    expect(alarm()).toBeNull();
    await alarms.armBy(800);
    expect(alarm()).toBe(800);
    expect(calls).toEqual({ get: 1, set: 3, delete: 1 });
  });

  it("forgets what it knew when a write fails, and reads the stored alarm again", async () => {
    const { storage, calls, alarm } = fakeStorage(null, 1);
    const alarms = new EarliestAlarm(storage);
    await expect(alarms.armBy(100)).rejects.toThrow("storage failed");
    await alarms.armBy(200);
    expect(alarm()).toBe(200);
    expect(calls).toEqual({ get: 2, set: 2, delete: 0 });
  });

  it("`rearm` takes an alarm back or moves it to exactly the time given, writing only when that changes anything, and only while it knows what is armed", async () => {
    const { storage, calls, alarm } = fakeStorage(500);
    const alarms = new EarliestAlarm(storage);
    // Not read yet: it does nothing (someone could arm meanwhile while it read).
    expect(alarms.rearm(undefined)).toBe(false);
    expect(alarms.isArmed).toBeUndefined();
    expect(alarm()).toBe(500);
    await alarms.armBy(900);
    expect(alarms.isArmed).toBe(true);
    await alarms.rearm(900);
    expect(alarm()).toBe(900);
    await alarms.rearm(900);
    await alarms.rearm(undefined);
    expect(alarm()).toBeNull();
    expect(alarms.isArmed).toBe(false);
    await alarms.rearm(undefined);
    expect(calls).toEqual({ get: 1, set: 1, delete: 1 });
  });

  it("with a slack, keeps an alarm armed up to that much later than asked, and arms the time asked when it is later still", async () => {
    const { storage, calls, alarm } = fakeStorage(1_500);
    const alarms = new EarliestAlarm(storage);
    await alarms.armBy(1_000, 500);
    expect(alarm()).toBe(1_500);
    expect(alarms.armedAt).toBe(1_500);
    await alarms.armBy(999, 500);
    expect(alarm()).toBe(999);
    expect(calls).toEqual({ get: 1, set: 1, delete: 0 });
    alarms.fired();
    expect(alarms.armedAt).toBeNull();
  });
});
