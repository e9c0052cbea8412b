"use strict";
// batchlet dashboard: a hash-routed single page over /ui/api, refreshed by
// the server-sent events of /ui/api/watch. Everything it shows is set as
// text (never HTML), so object names and messages cannot inject markup.

const api = "/ui/api";
const view = document.getElementById("view");
const crumbs = document.getElementById("crumbs");
const live = document.getElementById("live");

// Colours of the index grid by cell letter (see JobDetail.Cells).
const cellColours = { p: "#c9ced6", r: "#2f7fe0", s: "#1f9d62", f: "#d9373e" };
const stateOfLetter = { p: "pending", r: "running", s: "succeeded", f: "failed" };

// page is what the current route shows and how to refresh it.
let page = null;

// el builds an element: attrs sets properties (class, text, href, title,
// dataset entries as data-*), children are elements or strings.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function table(cls, headers, rows) {
  return el("table", { class: cls },
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { text: h })))),
    el("tbody", {}, ...rows));
}

function td(text, cls) { return el("td", { text: String(text ?? ""), class: cls }); }

function badge(status) { return el("span", { class: "badge", "data-status": status, text: status }); }

function link(href, text) { return el("a", { href, text }); }

// Times depend on when things ran: they carry the class "volatile" (the
// screenshot tests hide it).
function ago(t) {
  if (!t) return "";
  return duration(Date.now() - Date.parse(t)) + " ago";
}

function duration(ms) {
  if (ms < 0 || Number.isNaN(ms)) ms = 0;
  const s = Math.round(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60 ? (s % 60) + "s" : "");
  if (s < 86400) return Math.floor(s / 3600) + "h" + (Math.floor(s / 60) % 60 ? (Math.floor(s / 60) % 60) + "m" : "");
  return Math.floor(s / 86400) + "d";
}

// A time cell has a fixed width, so a longer age does not move the columns.
function volatile(text) { return el("td", { class: "volatile time", text }); }

async function getJSON(path) {
  const r = await fetch(api + path, { credentials: "same-origin" });
  if (r.status === 401) { location.href = "/ui/login"; throw new Error("logged out"); }
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function setCrumbs(...parts) {
  crumbs.replaceChildren(...parts.flatMap((p, i) => (i ? [" / ", p] : [p])));
}

function showError(err) {
  view.replaceChildren(el("p", { class: "error", text: String(err.message || err) }));
}

// ---- Lists ----------------------------------------------------------------

function jobRowCells(j) {
  const completions = j.completions < 0 ? j.succeeded + " done" : j.succeeded + "/" + j.completions;
  const end = j.finished ? Date.parse(j.finished) : Date.now();
  return [
    td(j.namespace),
    el("td", {}, link(`#/job/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.name)}`, j.name)),
    el("td", {}, badge(j.status)),
    td(j.mode),
    td(completions, "num"), td(j.active, "num"), td(j.failed, "num"),
    el("td", {}, j.jobSet ? link(`#/jobset/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.jobSet)}`, j.jobSet) : ""),
    volatile(duration(end - Date.parse(j.created))),
    volatile(ago(j.created)),
  ];
}

const jobHeaders = ["Namespace", "Name", "Status", "Mode", "Completions", "Active", "Failed", "JobSet", "Duration", "Created"];

function listPage() {
  setCrumbs(el("span", { text: "Jobs and JobSets" }));
  return {
    async refresh() {
      const [jobs, sets] = await Promise.all([getJSON("/jobs"), getJSON("/jobsets")]);
      view.replaceChildren(
        el("h2", { text: `Jobs (${jobs.length})` }),
        jobs.length ? table("rows", jobHeaders,
          jobs.map((j) => el("tr", { "data-job": j.namespace + "/" + j.name, "data-status": j.status }, ...jobRowCells(j))))
          : el("p", { class: "dim", text: "No Jobs." }),
        el("h2", { text: `JobSets (${sets.length})` }),
        sets.length ? table("rows", ["Namespace", "Name", "Status", "Replicated Jobs", "Jobs", "Restarts", "Created"],
          sets.map((s) => el("tr", { "data-jobset": s.namespace + "/" + s.name, "data-status": s.status },
            td(s.namespace),
            el("td", {}, link(`#/jobset/${encodeURIComponent(s.namespace)}/${encodeURIComponent(s.name)}`, s.name)),
            el("td", {}, badge(s.status)),
            td(s.replicatedJobs, "num"), td(s.jobs, "num"), td(s.restarts, "num"),
            volatile(ago(s.created)))))
          : el("p", { class: "dim", text: "No JobSets." }));
      view.querySelectorAll("table")[0]?.setAttribute("id", "jobs-table");
    },
  };
}

// ---- Job page -------------------------------------------------------------

function conditionsTable(conds) {
  if (!conds.length) return el("p", { class: "dim", text: "No conditions." });
  return table("rows conditions", ["Type", "Status", "Reason", "Message", "Since"],
    conds.map((c) => el("tr", { "data-condition": c.type }, td(c.type), td(c.status), td(c.reason), td(c.message), volatile(ago(c.time)))));
}

function eventsTable(events) {
  if (!events.length) return el("p", { class: "dim", text: "No events." });
  return table("rows events", ["Type", "Reason", "Message", "Count", "Last seen"],
    events.map((e) => el("tr", { "data-type": e.type }, td(e.type), td(e.reason), td(e.message, "volatile"), td(e.count, "num"), volatile(ago(e.last)))));
}

// gridGeometry sizes the index grid: big cells for a few indexes, 6 px
// ones so 10,000 indexes fit at a glance.
function gridGeometry(n, width) {
  const size = n <= 100 ? 22 : n <= 500 ? 14 : n <= 2500 ? 9 : 6;
  const cols = Math.max(1, Math.min(n, Math.floor(width / size)));
  return { size, cols, rows: Math.ceil(n / cols) };
}

function drawGrid(canvas, cells, selected) {
  const g = gridGeometry(cells.length, 960);
  canvas.width = g.cols * g.size;
  canvas.height = Math.max(g.rows, 1) * g.size;
  canvas.dataset.cells = cells;
  canvas.dataset.cols = g.cols;
  canvas.dataset.size = g.size;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const gap = g.size >= 9 ? 2 : 1;
  for (let i = 0; i < cells.length; i++) {
    ctx.fillStyle = cellColours[cells[i]] || cellColours.p;
    ctx.fillRect((i % g.cols) * g.size, Math.floor(i / g.cols) * g.size, g.size - gap, g.size - gap);
  }
  if (selected !== null && selected < cells.length) {
    ctx.strokeStyle = "#111";
    ctx.lineWidth = 2;
    ctx.strokeRect((selected % g.cols) * g.size + 1, Math.floor(selected / g.cols) * g.size + 1, g.size - gap - 2, g.size - gap - 2);
  }
}

function cellAt(canvas, ev) {
  const size = Number(canvas.dataset.size), cols = Number(canvas.dataset.cols);
  const r = canvas.getBoundingClientRect();
  const x = Math.floor((ev.clientX - r.left) / size), y = Math.floor((ev.clientY - r.top) / size);
  const i = y * cols + x;
  return x < cols && i >= 0 && i < (canvas.dataset.cells || "").length ? i : null;
}

function legend(counts) {
  return el("div", { class: "legend", id: "legend" }, ...["pending", "running", "succeeded", "failed"].map((s) =>
    el("span", { class: "legend-item", "data-state": s },
      el("i", { class: "swatch", "data-state": s }), `${s} `, el("b", { text: String(counts[s] || 0) }))));
}

function podTitle(p) {
  const parts = [p.name, p.phase];
  if (p.started) parts.push("started " + new Date(p.started).toLocaleTimeString());
  if (p.finished) parts.push("finished " + new Date(p.finished).toLocaleTimeString());
  if (p.exitCode !== undefined) parts.push("exit code " + p.exitCode);
  if (p.reason) parts.push(p.reason);
  if (p.restarts) parts.push(p.restarts + " restarts");
  return parts.join(" · ");
}

function timelineTable(d, state, onLogs) {
  const t0 = Date.parse(d.job.created);
  const t1 = d.job.finished ? Date.parse(d.job.finished) : Date.now();
  const span = Math.max(t1 - t0, 1);
  const label = d.job.mode === "Indexed" ? "Index" : "Pod #";
  const rows = d.timeline.map((row) => {
    const bars = el("div", { class: "bars volatile" });
    for (const p of row.pods) {
      const start = Date.parse(p.started || p.created);
      const end = p.finished ? Date.parse(p.finished) : (p.phase === "Running" || p.phase === "Pending" ? t1 : start);
      const bar = el("span", { class: "bar", "data-phase": p.phase, title: podTitle(p) });
      bar.style.left = (100 * (start - t0) / span).toFixed(2) + "%";
      bar.style.width = Math.max(100 * (end - start) / span, 0.6).toFixed(2) + "%";
      bars.append(bar);
    }
    const last = row.pods[row.pods.length - 1];
    const restarts = row.pods.reduce((n, p) => n + p.restarts, 0);
    return el("tr", { "data-index": row.index, class: row.index === state.selected ? "selected" : "" },
      td(row.index, "num"), el("td", { class: "bars-cell" }, bars),
      td(row.pods.length, "num"), td(restarts, "num"),
      td(last && last.exitCode !== undefined ? last.exitCode : "", "num"),
      td(last ? last.reason || last.phase : ""),
      el("td", {}, last ? el("button", { class: "link volatile", text: last.name, onclick: () => onLogs(row.index, last) }) : ""));
  });
  const to = d.from + d.timeline.length;
  const pager = el("div", { class: "pager" },
    el("button", { text: "◀", disabled: d.from === 0, onclick: () => state.page(Math.max(d.from - 50, 0)) }),
    el("span", { text: d.timelineRows ? ` ${label === "Index" ? "indexes" : "pods"} ${d.from}–${to - 1} of ${d.timelineRows} ` : " no pods yet " }),
    el("button", { text: "▶", disabled: to >= d.timelineRows, onclick: () => state.page(d.from + 50) }));
  return el("div", { id: "timeline" }, pager,
    table("rows timeline", [label, "Pods over the Job's run", "Pods", "Restarts", "Exit", "Last state", "Logs"], rows));
}

function logViewer() {
  const title = el("span", { text: "Select an index (grid or timeline) to read its logs." });
  const container = el("select", { "aria-label": "container" });
  const follow = el("input", { type: "checkbox", checked: true });
  const pre = el("pre", { id: "log" });
  let target = null, abort = null;
  async function load() {
    if (abort) abort.abort();
    pre.textContent = "";
    if (!target) return;
    abort = new AbortController();
    const q = new URLSearchParams({ container: container.value });
    if (follow.checked) q.set("follow", "1");
    try {
      const r = await fetch(`${api}/logs/${encodeURIComponent(target.ns)}/${encodeURIComponent(target.pod)}?${q}`, { signal: abort.signal });
      if (!r.ok) { pre.textContent = (await r.json()).error; return; }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(dec.decode(value, { stream: true }));
        if (pre.textContent.length > 1 << 20) pre.textContent = pre.textContent.slice(-(1 << 19));
        if (stick) pre.scrollTop = pre.scrollHeight;
      }
    } catch (e) {
      if (e.name !== "AbortError") pre.append("\n[" + e.message + "]");
    }
  }
  container.addEventListener("change", load);
  follow.addEventListener("change", load);
  const node = el("section", { id: "logs" }, el("h3", { text: "Logs" }),
    el("div", { class: "log-bar" }, title, container, el("label", {}, follow, " follow")), pre);
  return {
    node,
    open(ns, index, pod) {
      target = { ns, pod: pod.name };
      title.textContent = (index === null ? "" : `index ${index} · `) + `pod ${pod.name}`;
      container.replaceChildren(...(pod.containers || []).map((c) => el("option", { value: c, text: c })));
      load();
    },
    close() { if (abort) abort.abort(); },
  };
}

function jobPage(ns, name) {
  setCrumbs(link("#/", "Jobs"), el("span", { text: `${ns}/${name}` }));
  const state = { selected: null, from: 0, detail: null };
  const summary = el("section", { id: "job-summary" });
  const canvas = el("canvas", { id: "grid" });
  const hover = el("div", { class: "dim", id: "grid-hover", text: "\u00a0" });
  const legendSlot = el("div"), timelineSlot = el("div"), eventsSlot = el("div");
  const gridBox = el("section", { id: "grid-box" }, el("h3", { text: "Indexes" }), legendSlot, canvas, hover);
  const logs = logViewer();
  const sections = [summary, gridBox, el("section", {}, el("h3", { text: "Timeline" }), timelineSlot), logs.node,
    el("section", {}, el("h3", { text: "Events" }), eventsSlot)];
  view.replaceChildren(...sections);

  function openLogs(index, pod) {
    state.selected = index;
    logs.open(ns, index, pod);
    if (state.detail) render(state.detail);
  }
  canvas.addEventListener("mousemove", (ev) => {
    const i = cellAt(canvas, ev);
    hover.textContent = i === null ? "\u00a0" : `index ${i}: ${stateOfLetter[canvas.dataset.cells[i]]}`;
  });
  canvas.addEventListener("click", async (ev) => {
    const i = cellAt(canvas, ev);
    if (i === null) return;
    state.selected = i;
    state.from = Math.floor(i / 50) * 50;
    await p.refresh();
    const row = state.detail.timeline.find((r) => r.index === i);
    if (row && row.pods.length) logs.open(ns, i, row.pods[row.pods.length - 1]);
  });
  state.page = (from) => { state.from = from; p.refresh(); };

  function render(d) {
    const j = d.job;
    summary.replaceChildren(
      el("h2", {}, `Job ${j.namespace}/${j.name} `, badge(j.status)),
      el("dl", { class: "facts" },
        el("dt", { text: "Mode" }), el("dd", { text: j.mode }),
        el("dt", { text: "Completions" }), el("dd", { text: j.completions < 0 ? "unset" : String(j.completions) }),
        el("dt", { text: "Parallelism" }), el("dd", { text: String(j.parallelism) }),
        el("dt", { text: "Active" }), el("dd", { text: String(j.active) }),
        el("dt", { text: "Succeeded" }), el("dd", { text: String(j.succeeded) }),
        el("dt", { text: "Failed" }), el("dd", { text: String(j.failed) }),
        d.failedIndexes ? el("dt", { text: "Failed indexes" }) : null, d.failedIndexes ? el("dd", { text: d.failedIndexes }) : null,
        j.jobSet ? el("dt", { text: "JobSet" }) : null, j.jobSet ? el("dd", {}, link(`#/jobset/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.jobSet)}`, j.jobSet)) : null),
      conditionsTable(d.conditions));
    legendSlot.replaceChildren(legend(d.counts));
    drawGrid(canvas, d.cells, state.selected);
    timelineSlot.replaceChildren(timelineTable(d, state, openLogs));
    eventsSlot.replaceChildren(eventsTable(d.events));
  }
  const p = {
    async refresh() {
      state.detail = await getJSON(`/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}?from=${state.from}`);
      if (!summary.isConnected) view.replaceChildren(...sections); // after an error message
      render(state.detail);
    },
    leave() { logs.close(); },
  };
  return p;
}

// ---- JobSet page ----------------------------------------------------------

function jobSetPage(ns, name) {
  setCrumbs(link("#/", "JobSets"), el("span", { text: `${ns}/${name}` }));
  return {
    async refresh() {
      const d = await getJSON(`/jobsets/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
      const s = d.jobSet;
      view.replaceChildren(
        el("section", { id: "jobset-summary" },
          el("h2", {}, `JobSet ${s.namespace}/${s.name} `, badge(s.status)),
          el("dl", { class: "facts" },
            el("dt", { text: "Replicated Jobs" }), el("dd", { text: String(s.replicatedJobs) }),
            el("dt", { text: "Jobs" }), el("dd", { text: String(s.jobs) }),
            el("dt", { text: "Restarts" }), el("dd", { text: String(s.restarts) })),
          conditionsTable(d.conditions)),
        el("h3", { text: "Replicated Jobs" }),
        table("rows", ["Name", "Replicas", "Ready", "Active", "Succeeded", "Failed", "Suspended"],
          d.replicatedJobs.map((r) => el("tr", { "data-replicated-job": r.name },
            td(r.name), td(r.replicas, "num"), td(r.ready, "num"), td(r.active, "num"), td(r.succeeded, "num"), td(r.failed, "num"), td(r.suspended, "num")))),
        el("h3", { text: `Jobs (${d.jobs.length})` }),
        table("rows", jobHeaders, d.jobs.map((j) => el("tr", { "data-job": j.namespace + "/" + j.name, "data-status": j.status }, ...jobRowCells(j)))),
        el("h3", { text: "Events" }), eventsTable(d.events));
    },
  };
}

// ---- Routing and live updates ---------------------------------------------

function route() {
  if (page && page.leave) page.leave();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "job" && parts.length === 3) page = jobPage(parts[1], parts[2]);
  else if (parts[0] === "jobset" && parts.length === 3) page = jobSetPage(parts[1], parts[2]);
  else page = listPage();
  refresh();
}

// refresh reloads the page, one request at a time: changes arriving while
// one runs cause a single reload after it.
let inflight = false, again = false, retry = null;
async function refresh() {
  if (inflight) { again = true; return; }
  inflight = true;
  const current = page;
  try {
    await current.refresh();
    document.body.dataset.loaded = "true";
  } catch (e) {
    // Shown until a retry succeeds (e.g. the caches still syncing at start).
    if (current === page) { showError(e); retry = retry || setTimeout(() => { retry = null; refresh(); }, 2000); }
  } finally {
    inflight = false;
    if (again) { again = false; refresh(); }
  }
}

function connect() {
  const es = new EventSource(api + "/watch");
  es.addEventListener("hello", () => { live.dataset.state = "live"; live.textContent = "live"; });
  es.addEventListener("change", () => refresh());
  es.addEventListener("error", () => { live.dataset.state = "reconnecting"; live.textContent = "reconnecting"; });
}

window.addEventListener("hashchange", route);
route();
connect();
