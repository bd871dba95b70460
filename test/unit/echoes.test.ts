/**
 * Echoes (src/log/echoes.ts): a partition wakes again only the subscribers that have not heard of
 * its appends — task readers whose group offset lags, restore workers that have not answered —
 * backing off, and arms nothing once every subscriber has heard.
 */
import { describe, expect, it } from "vitest";
import {
  ALARM_SLACK_MS,
  ECHO_MS,
  EchoSchedule,
  echoTargets,
  echoWaitsUntil,
  firstEchoMs,
  keepsAlarm,
  MAX_ECHO_MS,
  nextEchoAt,
  TASK_ECHO_MS,
  UNSEEN_READER_ECHOES,
} from "../../src/log/echoes";
import { QUIET_COMPACTION_MS } from "../../src/log/partition/log-cleaner-manager";
import { hearsByAnswering, instanceName, restoreWorkerName } from "../../src/names";
import { RECORD_OWED_MS } from "../../src/task/outbox-sender";
import { WakeUps } from "../../src/log/wake-ups";

describe("echoTargets", () => {
  it("wakes task readers again while their committed offset is behind the end, however many echoes were made", () => {
    expect(echoTargets({ taskReaders: "behind", unheard: [], echoes: 40 })).toEqual({ tasks: true, others: [] });
    expect(echoTargets({ taskReaders: "behind", unheard: [], echoes: undefined })).toEqual({ tasks: true, others: [] });
  });

  it("gives task readers whose progress it cannot see a few echoes, not endless ones", () => {
    expect(echoTargets({ taskReaders: "unknown", unheard: [], echoes: 0 })?.tasks).toBe(true);
    expect(echoTargets({ taskReaders: "unknown", unheard: [], echoes: UNSEEN_READER_ECHOES - 1 })?.tasks).toBe(true);
    expect(echoTargets({ taskReaders: "unknown", unheard: [], echoes: UNSEEN_READER_ECHOES })).toBeUndefined();
  });

  it("wakes only the restore workers that have not answered, and not the caught-up tasks beside them", () => {
    expect(echoTargets({ taskReaders: "caught-up", unheard: ["restore@b"], echoes: 3 })).toEqual({ tasks: false, others: ["restore@b"] });
    expect(echoTargets({ taskReaders: "none", unheard: ["restore@a"], echoes: 0 })).toEqual({ tasks: false, others: ["restore@a"] });
  });

  it("is nothing once every subscriber has heard: an idle partition arms no echo", () => {
    expect(echoTargets({ taskReaders: "caught-up", unheard: [], echoes: 0 })).toBeUndefined();
    expect(echoTargets({ taskReaders: "none", unheard: [], echoes: undefined })).toBeUndefined();
  });
});

describe("nextEchoAt", () => {
  it("comes ECHO_MS after an append, then backs off, doubling up to MAX_ECHO_MS", () => {
    expect(nextEchoAt(1_000, 0)).toBe(1_000 + ECHO_MS);
    expect(nextEchoAt(1_000, 1)).toBe(1_000 + 2 * ECHO_MS);
    expect(nextEchoAt(1_000, 2)).toBe(1_000 + 4 * ECHO_MS);
    expect(nextEchoAt(1_000, 30)).toBe(1_000 + MAX_ECHO_MS);
  });
});

describe("WakeUps: who heard", () => {
  it("counts a restore worker as heard up to the end its answered wake-up covered, and no further", () => {
    const wakeUps = new WakeUps();
    // After a restart nobody is known to have heard.
    expect(wakeUps.unheard(["restore@a", "restore@b"], 10)).toEqual(["restore@a", "restore@b"]);
    wakeUps.heard("restore@a", 10);
    expect(wakeUps.unheard(["restore@a", "restore@b"], 10)).toEqual(["restore@b"]);
    // A later append is news again.
    expect(wakeUps.unheard(["restore@a"], 12)).toEqual(["restore@a"]);
    // Answers that arrive out of order never move it back.
    wakeUps.heard("restore@a", 12);
    wakeUps.heard("restore@a", 11);
    expect(wakeUps.unheard(["restore@a"], 12)).toEqual([]);
  });

  it("forgets what an unsubscribed worker heard", () => {
    const wakeUps = new WakeUps();
    wakeUps.heard("restore@a", 10);
    wakeUps.forget("restore@a");
    expect(wakeUps.unheard(["restore@a"], 10)).toEqual(["restore@a"]);
  });
});

describe("firstEchoMs", () => {
  const task = instanceName({ taskId: "0_1", placement: "eu" });
  it("waits TASK_ECHO_MS, past the time a task may owe its group offset, when task instances alone read the partition", () => {
    expect(TASK_ECHO_MS).toBeGreaterThan(RECORD_OWED_MS);
    expect(firstEchoMs([task, instanceName({ taskId: "0_1", placement: "us" })], hearsByAnswering)).toBe(TASK_ECHO_MS);
    expect(nextEchoAt(1_000, 0, TASK_ECHO_MS)).toBe(1_000 + TASK_ECHO_MS);
  });

  it("keeps ECHO_MS when a listener (a restore worker, a hub) hears by answering", () => {
    expect(firstEchoMs([restoreWorkerName("eu")], hearsByAnswering)).toBe(ECHO_MS);
    expect(firstEchoMs([task, restoreWorkerName("us", 2)], hearsByAnswering)).toBe(ECHO_MS);
  });
});

describe("one alarm write per spell on a changelog (issue #33)", () => {
  it("a listener's first echo on a compacted partition comes just after its quiet compaction: one alarm serves both", () => {
    const first = firstEchoMs([restoreWorkerName("eu")], hearsByAnswering, true);
    expect(first).toBe(QUIET_COMPACTION_MS + ALARM_SLACK_MS);
    // The compaction due after an append made a few milliseconds after the echo was armed is served by it.
    const armed = nextEchoAt(1_000, 0, first);
    const compactionDue = 1_003 + QUIET_COMPACTION_MS;
    expect(armed).toBeGreaterThanOrEqual(compactionDue);
    expect(armed).toBeLessThanOrEqual(compactionDue + ALARM_SLACK_MS);
    // Not on a partition tasks alone read, nor on one that does not compact.
    expect(firstEchoMs([instanceName({ taskId: "0_1", placement: "eu" })], hearsByAnswering, true)).toBe(TASK_ECHO_MS);
    expect(firstEchoMs([restoreWorkerName("eu")], hearsByAnswering, false)).toBe(ECHO_MS);
  });

  it("keeps an alarm that comes no later than the latest append's first echo and than what is due, rather than move it later or delete it, where a listener reads the partition", () => {
    // Armed for the first append of the spell (at 11_000), the latest append at 3_000: kept, whether maintenance is due later or never.
    expect(keepsAlarm(11_000, 13_000, 3_000 + 11_000, true)).toBe(true);
    expect(keepsAlarm(11_000, undefined, 3_000 + 11_000, true)).toBe(true);
    // The compaction due a few milliseconds before it: within the slack, kept.
    expect(keepsAlarm(11_000, 11_000 - ALARM_SLACK_MS, 14_000, true)).toBe(true);
    // Due sooner than the slack allows: moved.
    expect(keepsAlarm(11_000, 9_000, 14_000, true)).toBe(false);
    // Later than the first echo of the latest append (an echo backing off): taken back, so that an idle partition's alarm does not come again.
    expect(keepsAlarm(40_000, 60_000, 14_000, true)).toBe(false);
    // Nothing armed, or not known (after a restart): nothing to keep.
    expect(keepsAlarm(null, 13_000, 14_000, true)).toBe(false);
    expect(keepsAlarm(undefined, 13_000, 14_000, true)).toBe(false);
    expect(keepsAlarm(11_000, 13_000, undefined, true)).toBe(false);
    // Not where task instances alone read the partition (the input): taken back there, as before.
    expect(keepsAlarm(11_000, 13_000, 14_000, false)).toBe(false);
  });

  it("an echo found due before the latest append is a first echo old waits for it, once, when the alarm was armed for an earlier append of a partition a listener reads", () => {
    // Armed for an append at 0 (its echo at 15_000), the latest at 10_000.
    const clock = { now: 15_000, listened: true, armedFor: TASK_ECHO_MS, lastAppendAt: 10_000, first: TASK_ECHO_MS, echoes: 0, waited: false };
    expect(echoWaitsUntil(clock)).toBe(10_000 + TASK_ECHO_MS);
    // Once: appends that keep coming with every wake-up lost still get their echo.
    expect(echoWaitsUntil({ ...clock, waited: true })).toBeUndefined();
    // The latest append is old enough: the echo goes now.
    expect(echoWaitsUntil({ ...clock, now: 10_000 + TASK_ECHO_MS })).toBeUndefined();
    // Armed for the latest append's echo (a few milliseconds before the append was noted), however early it runs: now.
    expect(echoWaitsUntil({ ...clock, now: 11_000, armedFor: 10_000 - 5 + TASK_ECHO_MS })).toBeUndefined();
    // Echoes already made (backing off), or not known what it was armed for or when the last append was (a restart): now.
    expect(echoWaitsUntil({ ...clock, echoes: 1 })).toBeUndefined();
    expect(echoWaitsUntil({ ...clock, echoes: undefined })).toBeUndefined();
    expect(echoWaitsUntil({ ...clock, lastAppendAt: undefined })).toBeUndefined();
    expect(echoWaitsUntil({ ...clock, armedFor: undefined })).toBeUndefined();
    // Where task instances alone read the partition its alarm is not kept: an early one does not wait.
    expect(echoWaitsUntil({ ...clock, listened: false })).toBeUndefined();
  });
});

describe("EchoSchedule: the bookkeeping a partition keeps between its appends and its alarm", () => {
  const listener = (name: string) => name.startsWith("restore:");
  it("arms the first echo per its subscribers, waits once for the latest append, backs off after each echo, and keeps an alarm within the horizon", () => {
    const echoes = new EchoSchedule();
    expect(echoes.beforeAppend(0, [], listener, true)).toBeUndefined();
    const first = echoes.beforeAppend(0, ["restore:a"], listener, true)!;
    expect(first).toBe(firstEchoMs(["restore:a"], listener, true));
    echoes.appended(0);
    expect(echoes.echoes).toBe(0);
    // An alarm armed for an earlier append runs before the latest append's first echo: it waits, once.
    echoes.beforeAppend(4_000, ["restore:a"], listener, true);
    echoes.appended(4_000);
    expect(echoes.waitUntil(first, first, true)).toBe(4_000 + first);
    expect(echoes.waitUntil(4_000 + first, 4_000 + first, true)).toBeUndefined();
    expect(echoes.echoed(4_000 + first)).toBe(nextEchoAt(4_000 + first, 1));
    expect(echoes.echoes).toBe(1);
    // Kept: armed no later than the latest append's first echo; taken back when later.
    expect(echoes.keeps(4_000 + first, undefined)).toBe(true);
    expect(echoes.keeps(4_000 + first + 1, undefined)).toBe(false);
    // Nothing due: no wait.
    expect(echoes.waitUntil(0, 0, false)).toBeUndefined();
  });
});
