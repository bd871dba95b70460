import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, launchBrowser } from "./browser";
import { startWranglerDev, until, type WranglerDev } from "./wrangler-dev";

let dev: WranglerDev;
let browser: Browser | undefined;
let context: BrowserContext;

beforeAll(async () => {
  dev = await startWranglerDev({ config: "examples/page-views/wrangler.toml" });
  browser = await launchBrowser();
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
});

async function views(regions: readonly string[]): Promise<void> {
  const records = regions.map((region, i) => ({ key: `user-${i}`, value: { region, page: "/" } }));
  const response = await fetch(`${dev.url}/topics/page-views/records`, {
    method: "POST",
    headers: { Authorization: `Bearer ${dev.token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ records }),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

/** The live page's table: region → views. */
async function table(page: Page): Promise<Record<string, number>> {
  const rows = await page
    .locator("#regions tr")
    .evaluateAll((trs) => trs.map((tr) => [(tr as HTMLElement).dataset.region, Number((tr as HTMLElement).dataset.views)]));
  return Object.fromEntries(rows);
}

describe("edge-streams/client in Chromium", () => {
  it("the page-views live page shows each region's views as they are committed, without reloading", { timeout: 180_000 }, async () => {
    await views(["eu", "eu", "us"]);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("console", (message) => message.type() === "error" && problems.push(message.text()));
    let loads = 0;
    page.on("load", () => loads++);

    const response = await page.goto(`${dev.url}/live/`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.fill("#token", dev.token);
    await page.click('button[type="submit"]');
    await until(async () => (await page.locator("#status").getAttribute("data-state")) === "live", 30_000, "the page to go live");
    // Its first snapshot: whatever has been counted so far, then the rest as it comes.
    await until(async () => JSON.stringify(await table(page)) === JSON.stringify({ eu: 2, us: 1 }), 30_000, "eu 2, us 1 on the page");

    await views(["ap", "eu", "us", "us"]);
    await until(async () => JSON.stringify(await table(page)) === JSON.stringify({ ap: 1, eu: 3, us: 3 }), 30_000, "ap 1, eu 3, us 3 on the page");
    await views(Array.from({ length: 20 }, (_, i) => (i % 2 ? "sa" : "eu")));
    await until(async () => JSON.stringify(await table(page)) === JSON.stringify({ ap: 1, eu: 13, sa: 10, us: 3 }), 30_000, "the next 20 views on the page");
    expect(loads).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a key watched from a page with the client modules sees every count once, in order, then a wrong token is reported, not retried", {
    timeout: 120_000,
  }, async () => {
    const page = await context.newPage();
    await page.goto(`${dev.url}/live/`);
    // As text: vitest rewrites a dynamic import() in this file's own functions.
    await page.evaluate(`(async () => {
      const { watch } = await import("/client/index.js");
      window.seen = [];
      window.sub = watch("views-per-region", "oc", (e) => window.seen.push(e), { token: ${JSON.stringify(dev.token)} });
    })()`);
    const seen = () =>
      page.evaluate(() => (window as unknown as { seen: { type: string; entries?: { value: number | null }[]; value?: number | null }[] }).seen);
    await until(async () => (await seen()).length > 0, 30_000, "the key's snapshot");
    expect((await seen())[0]).toMatchObject({ type: "snapshot", reason: "initial", entries: [{ key: "oc", value: null }] });
    for (let i = 0; i < 6; i++) await views(["oc"]);
    const changes = async () => (await seen()).filter((e) => e.type === "change").map((e) => e.value);
    await until(async () => (await changes()).at(-1) === 6, 30_000, "oc's count 6 at the page");
    // Commits of a cached store may fold views processed together into one change: never one twice, never out of order.
    const counts = (await changes()) as number[];
    expect(counts.every((n, i) => i === 0 || n > counts[i - 1]!)).toBe(true);
    expect((await seen()).filter((e) => e.type === "error")).toEqual([]);

    const refused = await page.evaluate(`(async () => {
      const { watch } = await import("/client/index.js");
      const error = await watch("views-per-region", "oc", () => undefined, { token: "not-the-token" }).finished;
      return { status: error?.status, code: error?.code };
    })()`);
    expect(refused).toEqual({ status: 401, code: "unauthorized" });
    await page.close();
  });
});
