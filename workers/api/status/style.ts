/** The status page's and the sign-in form's style sheet (components.tsx), inserted as is. */
export const STYLE = `
:root { color-scheme: light; --fg:#1d2330; --muted:#667085; --line:#d8dde6; --card:#fff; --bg:#f4f6f9;
  --active:#1f6feb; --standby:#8250df; --idle:#98a2b3; --ok:#1a7f37; --warn:#bf8700; --bad:#cf222e; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header.top { display:flex; align-items:center; gap:16px; padding:12px 20px; background:#0d1b2a; color:#fff; }
header.top h1 { font-size:18px; margin:0; }
header.top .meta { color:#c9d1d9; font-size:13px; flex:1; }
header.top form { margin:0; }
header.top button { font:inherit; background:transparent; color:#fff; border:1px solid #8b949e; border-radius:6px; padding:3px 10px; cursor:pointer; }
main { padding:16px 20px; }
.placements { display:grid; gap:16px; align-items:start; }
.placement > h2 { font-size:15px; margin:0 0 2px; }
.placement > .note { color:var(--muted); font-size:12px; margin:0 0 8px; }
.card { background:var(--card); border:1px solid var(--line); border-left:4px solid var(--idle); border-radius:8px; padding:10px 12px; margin-bottom:10px; }
.card.active { border-left-color:var(--active); } .card.standby { border-left-color:var(--standby); } .card.down, .card.failed { border-left-color:var(--bad); }
.card h3 { font-size:15px; margin:0 0 4px; display:flex; gap:6px; align-items:center; flex-wrap:wrap; }
.badge { font-size:11px; font-weight:600; letter-spacing:.02em; border-radius:10px; padding:1px 8px; background:#eef1f5; color:var(--fg); }
.badge.active { background:#ddeafe; color:#0b4fb3; } .badge.standby { background:#efe6fd; color:#5e2bb8; }
.badge.RUNNING { background:#dafbe1; color:var(--ok); } .badge.RESTORING { background:#fff3c4; color:#7d5a00; }
.badge.UPDATING { background:#efe6fd; color:#5e2bb8; } .badge.down, .badge.FAILED { background:#ffe1e1; color:var(--bad); }
.facts { display:flex; flex-wrap:wrap; gap:4px 14px; color:var(--muted); font-size:12px; margin:2px 0 6px; }
.facts b { color:var(--fg); font-weight:600; }
.bar { margin:6px 0; }
.bar .label { display:flex; justify-content:space-between; font-size:12px; gap:8px; }
.bar progress { width:100%; height:12px; accent-color:var(--active); }
.bar.standby progress { accent-color:var(--standby); }
.events { font-size:12px; color:var(--muted); margin:4px 0 0; padding-left:16px; }
.events .wipe, .events .failed { color:var(--bad); } .events .migrated-away, .events .skipped, .events .offsets-reset { color:var(--warn); }
section.recent { margin-top:8px; }
section.recent h2 { font-size:15px; }
table { border-collapse:collapse; background:var(--card); border:1px solid var(--line); font-size:13px; }
th, td { text-align:left; padding:4px 10px; border-bottom:1px solid var(--line); }
.muted { color:var(--muted); }
form.login { max-width:360px; margin:12vh auto; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:22px; }
form.login h1 { font-size:18px; margin:0 0 12px; }
form.login input { width:100%; font:inherit; padding:7px 9px; border:1px solid var(--line); border-radius:6px; margin:6px 0 12px; }
form.login button { font:inherit; background:var(--active); color:#fff; border:0; border-radius:6px; padding:7px 14px; cursor:pointer; }
.error { color:var(--bad); }
section.summary { display:flex; flex-wrap:wrap; gap:8px 24px; align-items:center; background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 14px; margin-bottom:16px; }
section.summary .stat b { font-size:16px; }
section.summary .bar { flex:1 1 280px; }
nav.pages { display:flex; gap:16px; margin:4px 0 14px; font-size:13px; }
`;
