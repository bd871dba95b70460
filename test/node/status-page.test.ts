/**
 * The status page in a real browser (headless Chromium driven by playwright-core: Debian's when
 * installed, else the one the npm package @sparticuz/chromium ships, so `npm install` suffices) against
 * a real `wrangler dev`: sign in through the form, then — the page open, never reloaded (a marker on
 * its window survives, no load event) — corrupt a task and see its card turn RESTORING, ingest and
 * see its lag grow, watch a long restore advance, take a screenshot, and see the task RUNNING with
 * lag 0 at the end: every change comes from `GET /tasks/watch`, put in place by the page's script.
 * The screenshot goes to a temporary file; with UPDATE_SCREENSHOT=1 also to docs/status-page.png.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, launchBrowser } from "./browser";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

const ORDERS = 3_000;
const BATCH_RECORDS = 100;
/** A restore round's window: the batch and RESTORE_READ_AHEAD's default 4 more (every key distinct here: nothing compacts). */
const WINDOW_RECORDS = 5 * BATCH_RECORDS;
const root = fileURLToPath(new URL("../..", import.meta.url));

let dev: WranglerDev;
let browser: Browser | undefined;
let context: BrowserContext;

beforeAll(async () => {
  dev = await startWranglerDev({ vars: { FAULT_INJECTION: "on", RESTORE_BATCH_RECORDS: String(BATCH_RECORDS) } });
  browser = await launchBrowser({ width: 1280, height: 760 });
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
});

async function api(path: string, body?: unknown) {
  const response = await fetch(`${dev.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${dev.token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, `${path}: ${await response.clone().text()}`).toBe(200);
  return response.json() as Promise<any>;
}

type Task = { id: string; role: string; placement: string; state: string; lag: number; incarnation: number; changelogs: { restored: number; end: number }[] };

async function task0(): Promise<Task> {
  const { tasks } = (await api("/tasks")) as { tasks: Task[] };
  return tasks.find((t) => t.id === "0_0" && t.role === "active")!;
}

/** The state the page shows for an instance's card. */
async function cardState(page: Page, instance: string): Promise<string | null> {
  return page
    .locator(`article[data-instance="${instance}"]`)
    .getAttribute("data-state", { timeout: 2_000 })
    .catch(() => null);
}

/** The lag the page shows for an instance. */
async function lagShown(page: Page, instance: string): Promise<number> {
  const text = await page
    .locator(`b[data-lag="${instance}"]`)
    .textContent({ timeout: 2_000 })
    .catch(() => null);
  return text === null ? Number.NaN : Number(text.replace(/,/g, ""));
}

/** The restore bar's value as the page shows it now (undefined while it has none). */
async function barValue(page: Page, instance: string): Promise<number | undefined> {
  try {
    const value = await page.locator(`progress[data-instance="${instance}"]`).getAttribute("value", { timeout: 500 });
    return value === null ? undefined : Number(value);
  } catch {
    return undefined;
  }
}

describe("the status page in Chromium", () => {
  it("signs in, then follows a corruption, ingest and a restore in place, and shows the task running again", { timeout: 180_000 }, async () => {
    // Many orders to one task, each of its own customer, so its changelog is long even compacted:
    // ORDERS / WINDOW_RECORDS restore windows.
    for (let start = 0; start < ORDERS; start += 1_000) {
      const records = Array.from({ length: 1_000 }, (_, i) => ({ key: `customer-${start + i}`, value: { amount: 1 }, partition: 0 }));
      await api("/topics/orders/records", { records });
    }
    await until(
      async () => {
        const t = await task0();
        return t.state === "RUNNING" && t.lag === 0 && t.changelogs[0]!.end >= ORDERS;
      },
      60_000,
      "task 0_0 to process every order",
    );
    const before = await task0();
    const end = before.changelogs[0]!.end;
    const instance = `0_0@${before.placement}`;

    const page = await context.newPage();
    // Not signed in: the page sends the browser to the form.
    await page.goto(`${dev.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.fill('input[name="token"]', dev.token);
    await Promise.all([page.waitForURL(`${dev.url}/`), page.click('button[type="submit"]')]);
    const cookies = await context.cookies(dev.url);
    const session = cookies.find((c) => c.name === "__Host-edge_session");
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict" });
    expect(session!.value).not.toContain(dev.token);

    // From here on the page never loads again: a marker on its window survives, and no load event comes.
    let loads = 0;
    page.on("load", () => loads++);
    await page.evaluate(() => {
      (window as unknown as { liveMarker: number }).liveMarker = 42;
    });
    const marker = () => page.evaluate(() => (window as unknown as { liveMarker?: number }).liveMarker);
    await expect.poll(() => page.locator("[data-live]").textContent(), { timeout: 10_000 }).toMatch(/^live · updated/);
    expect(await cardState(page, instance)).toBe("RUNNING");

    // A corruption while the page is open: the card turns RESTORING with its bar at 0, in place.
    await api("/admin/restore/pause", {});
    await api("/admin/tasks/0_0/corrupt", {});
    expect(await task0()).toMatchObject({ state: "RESTORING", incarnation: before.incarnation + 1 });
    await until(async () => (await cardState(page, instance)) === "RESTORING", 15_000, "the page to show 0_0 RESTORING");
    await expect.poll(() => barValue(page, instance), { timeout: 10_000 }).toBe(0);
    expect(await page.locator(`progress[data-instance="${instance}"]`).getAttribute("max")).toBe(String(end));

    // Ingest while it restores (it processes nothing): its lag on the page moves.
    const lagBefore = await lagShown(page, instance);
    await api("/topics/orders/records", { records: Array.from({ length: 25 }, (_, i) => ({ key: `late-${i}`, value: { amount: 1 }, partition: 0 })) });
    await until(async () => (await lagShown(page, instance)) >= lagBefore + 25, 15_000, "the page to show the lag grown by 25");

    // Let restoration go a window at a time; the page shows each step as it comes.
    const seen = [0];
    for (const step of [1, 2]) {
      await api("/admin/restore/resume", { maxBatches: 1 });
      const target = step * WINDOW_RECORDS;
      await until(async () => (await task0()).changelogs[0]!.restored >= target, 30_000, `${target} records restored`);
      await until(async () => ((await barValue(page, instance)) ?? -1) >= target, 15_000, `the page to show ${target} restored`);
      seen.push((await barValue(page, instance)) ?? -1);
    }
    expect(seen[1]).toBeGreaterThan(seen[0]!);
    expect(seen[2]).toBeGreaterThan(seen[1]!);
    const card = await page.locator(`article[data-instance="${instance}"]`).textContent();
    expect(card).toMatch(/Restoring [\d,]+ \/ [\d,]+ records \(\d+%\)/);
    expect(card).toMatch(/rec\/s/);
    expect(await page.locator("section.recent").textContent()).toContain("corrupted, wiped");

    const shot = join(mkdtempSync(join(tmpdir(), "edge-streams-shot-")), "status-page.png");
    await page.screenshot({ path: shot, fullPage: true });
    const png = readFileSync(shot);
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(png.length).toBeLessThan(400_000);
    if (process.env.UPDATE_SCREENSHOT === "1") {
      mkdirSync(join(root, "docs"), { recursive: true });
      copyFileSync(shot, join(root, "docs/status-page.png"));
    }

    // Then all of it: the card turns RUNNING, without a restore bar, and works off its lag.
    await api("/admin/restore/resume", {});
    await until(async () => (await cardState(page, instance)) === "RUNNING", 60_000, "the page to show 0_0 RUNNING");
    expect(await page.locator(`progress[data-instance="${instance}"]`).count()).toBe(0);
    await until(async () => (await lagShown(page, instance)) === 0, 30_000, "the page to show 0_0 with lag 0");
    // All of it without a navigation.
    expect(loads).toBe(0);
    expect(await marker()).toBe(42);
    await page.close();
  });
});
