// The live page: every region's views (store `views-per-region`) through edge-streams/client's
// watchPrefix. A snapshot replaces the table (the first one, and after a resync); each change
// updates its row. The token stays in this page's memory only.
import { createClient } from "../client/index.js";

const form = document.getElementById("connect");
const tokenInput = document.getElementById("token");
const status = document.getElementById("status");
const body = document.getElementById("regions");
const counts = new Map();
let subscription;

function say(state, text) {
  status.dataset.state = state;
  status.textContent = text;
}

function row(region) {
  let tr = body.querySelector(`tr[data-region="${CSS.escape(region)}"]`);
  if (!tr) {
    tr = document.createElement("tr");
    tr.dataset.region = region;
    tr.append(document.createElement("td"), document.createElement("td"));
    tr.cells[0].textContent = region;
    tr.cells[1].className = "count";
    const after = [...body.rows].find((r) => r.dataset.region > region);
    body.insertBefore(tr, after ?? null);
  }
  return tr;
}

function show(region, views, highlight) {
  if (views === null) {
    counts.delete(region);
    row(region).remove();
    return;
  }
  counts.set(region, views);
  const tr = row(region);
  tr.cells[1].textContent = String(views);
  tr.dataset.views = String(views);
  if (highlight) {
    tr.classList.add("changed");
    setTimeout(() => tr.classList.remove("changed"), 600);
  }
}

function onEvent(event) {
  if (event.type === "snapshot") {
    counts.clear();
    body.replaceChildren();
    for (const { key, value } of event.entries) show(key, value, false);
    say("live", event.reason === "resync" ? "Live (resynchronised)." : "Live.");
  } else if (event.type === "change") {
    show(event.key, event.value, true);
    say("live", "Live.");
  } else if (event.retryInMs !== undefined) {
    say("retrying", `Reconnecting in ${Math.round(event.retryInMs / 100) / 10} s (${event.error.message}).`);
  } else {
    say("stopped", `Stopped: ${event.error.message}`);
  }
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  subscription?.close();
  say("connecting", "Connecting…");
  const client = createClient({ baseUrl: location.origin, token: tokenInput.value.trim() });
  subscription = client.watchPrefix("views-per-region", "", onEvent);
});
