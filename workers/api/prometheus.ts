/** The Prometheus text exposition format (version 0.0.4) of `GET /metrics`: families, their samples, escaping. */

type Labels = Readonly<Record<string, string>>;
type Sample = { readonly labels: Labels; readonly value: number; readonly suffix?: string };

/** A metric family: its name, type, help and samples. */
export interface Family {
  readonly name: string;
  readonly type: "counter" | "gauge" | "summary";
  readonly help: string;
  readonly samples: Sample[];
}

/** The family `edge_streams_<name>`: every series of `GET /metrics` is named under the one prefix. */
export function family(name: string, type: Family["type"], help: string, samples: Family["samples"] = []): Family {
  return { name: `edge_streams_${name}`, type, help, samples };
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 1e6) / 1e6);
}

/** Families in the text format: HELP and TYPE lines, then one line per sample. */
export function exposition(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
      lines.push(`${family.name}${sample.suffix ?? ""}${labels.length ? `{${labels.join(",")}}` : ""} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
