/** A subscription hub's series as `GET /metrics` lists them, for the tests of store watches and topic tails. */
import { expect } from "vitest";
import { call } from "./api";

/** The hub series `GET /metrics` lists for a topic partition: `<name>` or `<name>{label}` → value. */
export async function hubSeries(topic: string, partition: number): Promise<Map<string, number>> {
  const response = await call("/metrics?limit=500");
  expect(response.status).toBe(200);
  const series = new Map<string, number>();
  const own = `topic="${topic}",partition="${partition}"`;
  for (const line of (await response.text()).split("\n")) {
    const m = /^edge_streams_hub_([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || !m[2]!.startsWith(own)) continue;
    const extra = m[2]!.slice(own.length).replace(/^,/, "");
    series.set(extra ? `${m[1]}{${extra}}` : m[1]!, Number(m[3]));
  }
  return series;
}
