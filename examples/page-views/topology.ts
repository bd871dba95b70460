/**
 * The second example application: page views per region per minute. Views arrive keyed by user
 * on `page-views` ({ region, page }); they are regrouped by region, counted in tumbling one-minute
 * windows (store `views-per-minute`, queryable by region and time), held back until each minute
 * is final (`suppress`), then joined with the region table (`regions`: region id → { name }) and
 * published on `page-views-per-region`, keyed by region id. Views of a region missing from the
 * table are not published (an inner join). Each region's views so far are counted too (store
 * `views-per-region`), for the live page.
 */
import { Materialized, Serdes, StreamsBuilder, Suppressed, TimeWindows, type Topology } from "edge-streams";

export interface PageView {
  readonly region: string;
  readonly page: string;
}

export interface Region {
  readonly name: string;
}

/** One record of `page-views-per-region`. */
export interface RegionMinute {
  readonly region: string;
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly views: number;
}

export const PAGE_VIEWS_APPLICATION_ID = "page-views";
/** `page-views` and `regions` are joined (after regrouping), so they have the same partition count. */
export const PAGE_VIEWS_TOPICS = { "page-views": 4, regions: 4, "page-views-per-region": 4 } as const;
export const MINUTE_MS = 60_000;
/** How late a view may be and still count in its minute. */
export const PAGE_VIEWS_GRACE_MS = 10_000;

export function pageViewsTopology(): Topology {
  const builder = new StreamsBuilder();
  const regions = builder.table("regions", { key: Serdes.string(), value: Serdes.json<Region>() }, Materialized.as("regions"));
  const byRegion = builder
    .stream("page-views", { key: Serdes.string(), value: Serdes.json<PageView>() })
    .groupBy((_user, view) => view.region, { key: Serdes.string(), name: "views-by-region" });
  // Every view of each region so far: a key-value store the live page (public/live/) watches.
  byRegion.count(Materialized.as("views-per-region"));
  byRegion
    .windowedBy(TimeWindows.ofSizeAndGrace(MINUTE_MS, PAGE_VIEWS_GRACE_MS))
    .count(Materialized.as("views-per-minute", { retentionMs: 60 * MINUTE_MS }))
    .suppress(Suppressed.untilWindowCloses({ name: "final-minutes" }))
    .toStream()
    .map((minute, views) => ({ key: minute.key, value: { windowStart: minute.window.start, windowEnd: minute.window.end, views } }))
    .join(regions, (minute, region): RegionMinute => ({ region: region.name, ...minute }), { key: Serdes.string(), name: "minutes-by-region" })
    .to("page-views-per-region", { key: Serdes.string(), value: Serdes.json<RegionMinute>() });
  return builder.build({ applicationId: PAGE_VIEWS_APPLICATION_ID, topics: PAGE_VIEWS_TOPICS });
}
