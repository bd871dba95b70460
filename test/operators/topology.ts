/**
 * A test application with the operators of Kafka's DSL that the examples do not use, so that each
 * runs on the real runtime through wipes: clicks and views per user are cogrouped into one activity
 * row, and per tumbling window; clicks are keyed by page and repartitioned (three partitions, a
 * chosen partitioner) into tumbling windows emitted once each when they close
 * (`EmitStrategy.onWindowClose`), and counted per user in sliding windows emitted on close; clicks
 * join the views of the same user in an asymmetric window; views are counted per window with final
 * results held in a bounded buffer that stops the task when full (`untilWindowCloses(maxRecords…
 * shutDownWhenFull)`), and per session emitted on close. Built from the public API only. Topics
 * read with each built-in serde test the door (./door-topology.ts).
 */
import {
  BufferConfig,
  EmitStrategy,
  JoinWindows,
  Materialized,
  Serdes,
  SessionWindows,
  SlidingWindows,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  type Topology,
} from "edge-streams";
import { addDoorTopics, DOOR_TOPICS } from "./door-topology";

export interface Click {
  readonly page: string;
}

export interface View {
  readonly page: string;
}

export interface Activity {
  readonly clicks: number;
  readonly views: number;
  readonly pages: readonly string[];
}

export const OPERATORS_TOPICS = {
  clicks: 2,
  views: 2,
  activity: 2,
  "closed-click-windows": 2,
  "click-views": 2,
  "final-view-windows": 2,
  "view-sessions": 2,
  "windowed-activity": 2,
  "sliding-click-windows": 2,
} as const;
export const WINDOW_MS = 10_000;
export const SESSION_GAP_MS = 5_000;
export const SLIDING_DIFFERENCE_MS = 2_000;
/** A view joins a click from 500 ms before it to 1.5 s after it. */
export const JOIN_BEFORE_MS = 500;
export const JOIN_AFTER_MS = 1_500;
export const CLICK_PARTITIONS = 3;

/** The repartition topic's partition of a page: its first character's code, modulo the partition count. */
export const pagePartition = (page: string, partitions: number) => page.charCodeAt(0) % partitions;

const str = Serdes.string();

export function operatorsTopology(): Topology {
  const builder = new StreamsBuilder();
  const clicks = builder.stream("clicks", { key: str, value: Serdes.json<Click>() });
  const views = builder.stream("views", { key: str, value: Serdes.json<View>() });

  clicks
    .groupByKey()
    .cogroup<Activity>((_user, click, a) => ({ ...a, clicks: a.clicks + 1, pages: [...a.pages, click.page] }))
    .cogroup(views.groupByKey(), (_user, view, a) => ({ ...a, views: a.views + 1, pages: [...a.pages, view.page] }))
    // Uncached: the test compares the output record for record with the driver's, which commits after every record.
    .aggregate(() => ({ clicks: 0, views: 0, pages: [] }), Materialized.as("activity", { key: str, value: Serdes.json<Activity>(), caching: false }))
    .toStream()
    .to("activity", { key: str, value: Serdes.json<Activity>() });

  clicks
    .groupByKey()
    .cogroup<Activity>((_user, click, a) => ({ ...a, clicks: a.clicks + 1, pages: [...a.pages, click.page] }))
    .cogroup(views.groupByKey(), (_user, view, a) => ({ ...a, views: a.views + 1, pages: [...a.pages, view.page] }))
    .windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW_MS))
    .aggregate(() => ({ clicks: 0, views: 0, pages: [] }), Materialized.as("windowed-activity", { key: str, value: Serdes.json<Activity>() }))
    .toStream()
    .map((window, activity) => ({ key: window.key, value: { start: window.window.start, ...activity } }))
    .to("windowed-activity", { key: str });

  clicks
    .groupByKey()
    .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(SLIDING_DIFFERENCE_MS))
    .emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as("sliding-clicks"))
    .toStream()
    .map((window, count) => ({ key: window.key, value: { start: window.window.start, end: window.window.end, count } }))
    .to("sliding-click-windows", { key: str });

  clicks
    .selectKey((_user, click) => click.page)
    .repartition({ name: "clicks-by-page", numberOfPartitions: CLICK_PARTITIONS, key: str, partitioner: (page, _click, n) => pagePartition(page, n) })
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW_MS))
    .emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as("clicks-per-window"))
    .toStream()
    .map((window, count) => ({ key: window.key, value: { start: window.window.start, count } }))
    .to("closed-click-windows", { key: str });

  clicks
    .join(
      views,
      (click, view) => ({ clicked: click.page, viewed: view.page }),
      JoinWindows.ofTimeDifferenceWithNoGrace(0).before(JOIN_BEFORE_MS).after(JOIN_AFTER_MS),
      {
        name: "click-views",
      },
    )
    .to("click-views", { key: str });

  views
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW_MS))
    .count(Materialized.as("views-per-window"))
    .suppress(Suppressed.untilWindowCloses(BufferConfig.maxRecords(1_000).shutDownWhenFull()).withName("final-view-windows-buffer"))
    .toStream()
    .map((window, count) => ({ key: window.key, value: { start: window.window.start, count } }))
    .to("final-view-windows", { key: str });

  views
    .groupByKey()
    .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(SESSION_GAP_MS))
    .emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as("view-sessions"))
    .toStream()
    .map((session, count) => ({ key: session.key, value: { start: session.window.start, end: session.window.end, count } }))
    .to("view-sessions", { key: str });

  addDoorTopics(builder);
  return builder.build({ applicationId: "operators", topics: { ...OPERATORS_TOPICS, ...DOOR_TOPICS } });
}
