// gptg serve's pages: the runs table, a run (curves, config, playground,
// attention explorer) and a comparison. Plain JavaScript, no build step;
// the charts are uPlot's (assets/uplot, vendored).
"use strict";

const app = document.getElementById("app");
// A page opened with "still" in its query (/run?id=runs/x&still) is drawn
// once, for a picture: it opens no live stream and sets no timer (so that
// a headless browser's --virtual-time-budget ends), and leaves out what
// differs between two runs of the same commands or two machines: speeds,
// times, run ids. docs/serve-shot.sh takes the docs' pictures so.
const STILL = new URLSearchParams(location.search).has("still");

// work counts what the page waits for (answers, a stream's first rows, a
// generation): while any is pending <html> has no data-drawn, and once the
// last one settled and the frame after it is drawn, data-drawn="true": the
// condition a screenshot waits for, rather than a time.
let pendingWork = 0;
function work(p) {
  pendingWork++;
  delete document.documentElement.dataset.drawn;
  const settled = () => {
    if (--pendingWork > 0) return;
    requestAnimationFrame(() => { if (pendingWork === 0) document.documentElement.dataset.drawn = "true"; });
  };
  p.then(settled, settled);
  return p;
}

const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

// el builds an element: el("td", {class: "num"}, "text", child, ...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

// mount replaces the page's content, leaving out null parts.
function mount(...kids) { app.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined)); }

async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

const fmt = {
  loss: (v) => (v === null || v === undefined ? "" : v.toFixed(4)),
  int: (v) => (v ? v.toLocaleString("en-US") : ""),
  params: (v) => (!v ? "" : v >= 1e6 ? (v / 1e6).toFixed(2) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(v)),
  ago: (ms) => {
    if (!ms) return "";
    const s = (Date.now() - ms) / 1000;
    return s < 60 ? Math.round(s) + " s ago" : s < 3600 ? Math.round(s / 60) + " min ago" : s < 86400 ? Math.round(s / 3600) + " h ago" : Math.round(s / 86400) + " d ago";
  },
};

function stateBadge(run) {
  const b = el("span", { class: "state state-" + run.state, title: run.problem || "" }, run.state);
  return run.problem ? [b, el("div", { class: "problem" }, run.problem)] : b;
}

function crumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.flatMap((p, i) => (i ? [" / ", p] : [p])));
}

// ---- charts -------------------------------------------------------------

// lossChart draws train loss (lines) and test loss (points) of one or more
// runs against step, and takes rows as they arrive. runs: [{label, color}].
class LossChart {
  constructor(container, runs, opts = {}) {
    this.container = container;
    this.runs = runs;
    this.log = !!opts.log;
    this.extra = !!opts.extra; // lr and tokens/s on a second chart (one run)
    this.data = runs.map(() => ({ step: [], loss: [], test: [], lr: [], tok: [] }));
    this.pending = false;
    this.build();
  }
  width() { return Math.max(320, this.container.clientWidth - 10); }
  build() {
    this.container.replaceChildren();
    const series = [{ label: "step" }];
    this.runs.forEach((r, i) => {
      const c = r.color || PALETTE[i % PALETTE.length];
      series.push({ label: (this.runs.length > 1 ? r.label + " " : "") + "train", stroke: c, width: 1.5, spanGaps: true, points: { show: false } });
      series.push({ label: (this.runs.length > 1 ? r.label + " " : "") + "test", stroke: c, fill: c, width: 0, paths: () => null, points: { show: true, size: 7, fill: c } });
    });
    const yscale = this.log ? { distr: 3 } : {};
    this.plot = new uPlot({
      width: this.width(), height: 300, series, scales: { x: { time: false }, y: yscale },
      axes: [{ label: "step" }, { label: "loss" + (this.log ? " (log)" : "") }],
      cursor: { drag: { x: true, y: false } },
    }, this.joined(), this.container);
    if (this.extra) {
      this.plot2 = new uPlot({
        width: this.width(), height: 180,
        series: [{ label: "step" }, { label: "learning rate", stroke: "#9467bd", scale: "lr" }, { label: "tokens/s", stroke: "#7f7f7f", scale: "tok" }],
        scales: { x: { time: false } },
        axes: [{ label: "step" }, { scale: "lr", label: "lr", values: distinctTicks }, { scale: "tok", side: 1, label: "tokens/s", grid: { show: false } }],
      }, this.extraData(), this.container);
    }
  }
  joined() {
    if (this.runs.length === 1) {
      const d = this.data[0];
      return [d.step, d.loss, d.test];
    }
    const tables = this.data.map((d) => [d.step, d.loss, d.test]);
    if (tables.every((t) => t[0].length === 0)) return [[], ...tables.flatMap(() => [[], []])];
    return uPlot.join(tables.map((t) => (t[0].length ? t : [[0], [null], [null]])));
  }
  extraData() { const d = this.data[0]; return [d.step, d.lr, d.tok]; }
  add(i, cols) {
    const d = this.data[i];
    for (let k = 0; k < cols.step.length; k++) {
      d.step.push(cols.step[k]); d.loss.push(cols.loss[k]); d.test.push(cols.test_loss[k]);
      d.lr.push(cols.lr[k]); d.tok.push(STILL ? null : cols.tokens_per_s[k]);
    }
    this.redraw();
  }
  reset(i) { this.data[i] = { step: [], loss: [], test: [], lr: [], tok: [] }; this.redraw(); }
  points() { return this.data.reduce((n, d) => n + d.step.length, 0); }
  redraw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.plot.setData(this.joined());
      if (this.plot2) this.plot2.setData(this.extraData());
      this.container.dataset.points = this.points();
    });
  }
  setLog(on) { this.log = on; this.plot.destroy(); if (this.plot2) this.plot2.destroy(); this.build(); this.redraw(); }
  resize() { this.plot.setSize({ width: this.width(), height: 300 }); if (this.plot2) this.plot2.setSize({ width: this.width(), height: 180 }); }
}

// distinctTicks labels an axis's ticks with the fewest significant digits
// that keep them apart: uPlot's default gives a learning rate's ticks
// 0.00095 and 0.001 the same label.
function distinctTicks(u, splits) {
  for (let p = 1; p <= 8; p++) {
    const labels = splits.map((v) => (v == null ? "" : String(+v.toPrecision(p))));
    if (new Set(labels).size === labels.length) return labels;
  }
  return splits.map(String);
}

// follow streams a run's metrics (Server-Sent Events) into chart series i,
// and says in status when the stream fails: the server's "error" event
// (the file cannot be read: the stream ends) or a lost connection (the
// browser tries again; the message goes with the next rows). A still page
// reads the rows there are once instead.
function follow(id, chart, i, status) {
  const say = (msg) => { if (status) status.textContent = msg; };
  if (STILL) {
    work(getJSON("/api/metrics?id=" + encodeURIComponent(id)).then((cols) => chart.add(i, cols), (e) => say("the metrics of " + id + ": " + e.message)));
    return { close() {} };
  }
  const es = new EventSource("/api/live?id=" + encodeURIComponent(id));
  let first;
  work(new Promise((resolve) => { first = resolve; }));
  es.addEventListener("rows", (e) => { say(""); chart.add(i, JSON.parse(e.data)); first(); });
  es.addEventListener("reset", () => chart.reset(i));
  es.addEventListener("error", (e) => {
    first();
    if (e.data) {
      let msg = e.data;
      try { msg = JSON.parse(e.data).error; } catch (_) { /* the text as it came */ }
      say("live updates of " + id + " stopped: " + msg);
      es.close();
    } else if (es.readyState === EventSource.CLOSED) {
      say("live updates of " + id + " stopped: the server refused the stream");
    } else {
      say("live updates of " + id + ": connection lost, trying again…");
    }
  });
  return es;
}

let streams = [];
function closeStreams() { streams.forEach((s) => s.close()); streams = []; }
window.addEventListener("pagehide", closeStreams);

// ---- runs page ----------------------------------------------------------

const COLUMNS = [
  { key: "name", label: "run" },
  { key: "differs", label: "differs", sort: false },
  { key: "params", label: "params", num: true },
  { key: "step", label: "steps", num: true },
  { key: "train_loss", label: "train loss", num: true },
  { key: "test_loss", label: "test loss", num: true },
  { key: "tokens_per_s", label: "tokens/s", num: true },
  { key: "state", label: "state" },
  { key: "updated_ms", label: "updated", num: true },
];

// shortLabels names runs by their ids without the folders they all share:
// runs/tour/3-qkv/seed-1 and runs/tour/6-residual/seed-1 are 3-qkv/seed-1
// and 6-residual/seed-1 (their last parts alone would both be seed-1).
function shortLabels(ids) {
  const parts = ids.map((id) => id.split("/"));
  let k = 0;
  while (parts.every((p) => p.length > k + 1 && p[k] === parts[0][k])) k++;
  return parts.map((p) => p.slice(k).join("/"));
}

async function runsPage() {
  crumbs(el("span", {}, "runs"));
  const sel = new Set(JSON.parse(sessionStorage.getItem("gptg-selected") || "[]"));
  let sort = { key: "name", dir: 1 };
  let list = null;
  const table = el("table", { id: "runs-table" });
  const overlayBox = el("div", { id: "overlay", class: "chart" });
  const overlayStatus = el("span", { class: "problem", id: "overlay-live" });
  const logBox = el("input", { type: "checkbox", id: "overlay-log" });
  const comps = el("ul", { id: "comparisons" });
  const problems = el("div", { class: "problem" });
  const heading = el("h1", {}, "Runs");
  mount(heading, problems,
    el("div", { class: "panel wide" }, table),
    el("div", { class: "panel" }, el("div", { class: "toolbar" }, el("strong", {}, "Selected runs, overlaid"),
      el("label", {}, logBox, " log scale"), el("span", { class: "muted" }, "tick runs in the table to draw them here; the curves follow training live"), overlayStatus), overlayBox),
    el("h2", {}, "Comparisons (gptg ablate, gptg sweep)"), comps);

  let chart = null;
  function drawOverlay() {
    closeStreams();
    const ids = list ? list.runs.filter((r) => sel.has(r.id)).map((r) => r.id) : [];
    if (!ids.length) { overlayBox.replaceChildren(el("p", { class: "muted" }, "no run selected")); chart = null; return; }
    chart = new LossChart(overlayBox, shortLabels(ids).map((label) => ({ label })), { log: logBox.checked });
    ids.forEach((id, i) => streams.push(follow(id, chart, i, overlayStatus)));
  }
  logBox.addEventListener("change", () => chart && chart.setLog(logBox.checked));

  function render() {
    const head = el("tr", {}, el("th", {}, ""), COLUMNS.map((c) => {
      const cls = [c.num ? "num" : "", c.sort === false ? "" : "sortable", sort.key === c.key ? (sort.dir > 0 ? "sorted-asc" : "sorted-desc") : ""].join(" ");
      return el("th", { class: cls, "data-key": c.key, onclick: c.sort === false ? null : () => { sort = { key: c.key, dir: sort.key === c.key ? -sort.dir : 1 }; render(); } }, c.label);
    }));
    const runs = [...list.runs].sort((a, b) => {
      let x = a[sort.key], y = b[sort.key];
      if (x === null || x === undefined) x = sort.dir > 0 ? Infinity : -Infinity;
      if (y === null || y === undefined) y = sort.dir > 0 ? Infinity : -Infinity;
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    });
    const rows = runs.map((r) => el("tr", { "data-id": r.id },
      el("td", {}, el("input", { type: "checkbox", checked: sel.has(r.id), title: "overlay this run's curves", onchange: (e) => {
        if (e.target.checked) sel.add(r.id); else sel.delete(r.id);
        sessionStorage.setItem("gptg-selected", JSON.stringify([...sel]));
        drawOverlay();
      } })),
      el("td", {}, el("a", { href: "/run?id=" + encodeURIComponent(r.id) }, r.id)),
      el("td", { class: "differs" }, r.extends ? el("span", { class: "muted parent", title: "what this run's config changes from " + r.extends + ", the config it extends" },
        "from " + r.extends.split("/").pop() + ": ") : null, r.differs.map((d) => el("code", {}, d)),
        r.extends && !r.differs.length ? el("span", { class: "muted" }, "nothing") : null),
      el("td", { class: "num" }, fmt.params(r.params)),
      el("td", { class: "num" }, r.step.toLocaleString("en-US") + (r.total ? " / " + r.total.toLocaleString("en-US") : "")),
      el("td", { class: "num" }, fmt.loss(r.train_loss)),
      el("td", { class: "num" }, fmt.loss(r.test_loss)),
      el("td", { class: "num" }, r.tokens_per_s && !STILL ? Math.round(r.tokens_per_s).toLocaleString("en-US") : ""),
      el("td", {}, stateBadge(r)),
      el("td", { class: "num muted" }, STILL ? "" : fmt.ago(r.updated_ms))));
    if (!runs.length) rows.push(el("tr", {}, el("td", { colspan: 10, class: "muted" }, "no run folders yet under " + list.roots.join(", ") + ": start one with gptg train CONFIG")));
    table.replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
    comps.replaceChildren(...(list.comparisons.length ? list.comparisons.map((c) => el("li", {}, el("a", { href: "/compare?id=" + encodeURIComponent(c.id) }, c.id), " ", el("span", { class: "muted" }, c.kind)))
      : [el("li", { class: "muted" }, "none")]));
    problems.replaceChildren(...list.problems.map((p) => el("div", {}, p)));
  }
  async function refresh() {
    try {
      const old = list ? list.runs.map((r) => r.id).join("\n") : null;
      list = await getJSON("/api/runs");
      heading.textContent = "Runs in " + list.roots.join(", ");
      render();
      document.getElementById("status").textContent = "";
      if (old !== list.runs.map((r) => r.id).join("\n")) {
        for (const id of [...sel]) if (!list.runs.some((r) => r.id === id)) sel.delete(id);
        drawOverlay();
      }
    } catch (e) {
      document.getElementById("status").textContent = "server unreachable: " + e.message;
    }
  }
  await work(refresh());
  if (!STILL) setInterval(refresh, 2000);
  window.addEventListener("resize", () => chart && chart.resize());
}

// ---- run page -----------------------------------------------------------

async function runPage(id) {
  crumbs(el("a", { href: "/" }, "runs"), el("span", {}, id));
  // The page came with the run's first state (the server puts /api/run's
  // answer in it): drawn at once, without a request to wait for.
  let run = null;
  const first = document.getElementById("first-state");
  if (first) { try { run = JSON.parse(first.textContent); } catch (e) { run = null; } first.remove(); }
  if (!run || run.id !== id) try { run = await getJSON("/api/run?id=" + encodeURIComponent(id)); } catch (e) {
    mount(el("h1", {}, id), el("p", { class: "error" }, e.message));
    return;
  }
  const info = el("div", { id: "run-info" });
  const chartBox = el("div", { id: "loss-chart", class: "chart" });
  const liveStatus = el("span", { class: "problem", id: "live-status" });
  const logBox = el("input", { type: "checkbox", id: "log-scale" });
  const summary = el("pre", { id: "summary" }, "…");
  mount(
    el("h1", {}, id),
    info,
    el("div", { class: "panel" }, el("div", { class: "toolbar" }, el("strong", {}, "Loss"), el("label", {}, logBox, " log scale"),
      el("span", { class: "muted" }, "lines: training loss; points: test loss; updated live while train writes metrics.jsonl"), liveStatus), chartBox),
    el("div", { class: "row" },
      el("div", { class: "panel" }, el("h2", {}, run.arch === "encoder-decoder" ? "Translation playground" : "Sampling playground"), playground(run)),
      el("div", { class: "panel", id: "explorer-panel" }, el("h2", {}, "Attention explorer"), explorer(run))),
    el("div", { class: "row" },
      el("div", { class: "panel" }, el("h2", {}, "Config (config.toml)"),
        run.extends ? el("div", { class: "differs", id: "parent-changes" }, el("span", { class: "muted" }, "changes from " + run.extends + ", the config it extends: "),
          (run.parent_changes || []).map((d) => el("code", {}, d))) : null,
        el("div", { class: "differs" }, el("span", { class: "muted" }, "differs from the defaults: "), run.differs.map((d) => el("code", {}, d))),
        el("pre", { id: "config" }, (STILL ? (run.config || "").replace(/^# run id: \w+/m, "# run id: …") : run.config) || "(no config.toml)")),
      el("div", { class: "panel" }, el("h2", {}, "Model (gptg inspect)"), summary)));
  function showInfo(r) {
    info.replaceChildren(el("div", { class: "toolbar" }, stateBadge(r),
      el("span", {}, "step ", el("strong", { id: "run-step" }, r.step.toLocaleString("en-US")), r.total ? " of " + r.total.toLocaleString("en-US") : ""),
      r.params ? el("span", {}, fmt.params(r.params) + " parameters") : null,
      r.train_loss !== null ? el("span", {}, "train loss " + fmt.loss(r.train_loss)) : null,
      r.test_loss !== null ? el("span", {}, "test loss " + fmt.loss(r.test_loss)) : null,
      r.tokens_per_s && !STILL ? el("span", {}, Math.round(r.tokens_per_s).toLocaleString("en-US") + " tokens/s") : null,
      r.bad_rows ? el("span", { class: "problem" }, r.bad_rows + " lines of metrics.jsonl are not metrics rows or do not rise in step; not drawn") : null));
  }
  showInfo(run);
  const chart = new LossChart(chartBox, [{ label: id }], { extra: true });
  streams.push(follow(id, chart, 0, liveStatus));
  logBox.addEventListener("change", () => chart.setLog(logBox.checked));
  window.addEventListener("resize", () => chart.resize());
  if (!STILL) setInterval(async () => { try { showInfo(await getJSON("/api/run?id=" + encodeURIComponent(id))); } catch (e) { /* shown on the next success */ } }, 3000);
  work(getJSON("/api/summary?id=" + encodeURIComponent(id)).then((s) => { summary.textContent = s.summary || "(no summary)"; },
    (e) => { summary.textContent = e.message; summary.classList.add("error"); }));
}

// playground: prompt and settings in, tokens streamed out (SSE over a
// POST, read with fetch), with a stop button.
function playground(run) {
  const s = run.sample || {};
  // A translation run translates its prompt (greedy, or beam search)
  // instead of sampling a continuation.
  const translating = run.arch === "encoder-decoder";
  const prompt = el("textarea", { id: "gen-prompt", placeholder: translating ? "a sentence in the model's source language" : "" });
  // A translation run starts from a sentence of its own training pairs
  // (the server's "example"), one the model can read.
  prompt.value = translating ? run.example || "" : s.prompt || "\n";
  const num = (id, v, step, min, max) => el("input", { type: "number", id, value: v, step, min, max });
  const temp = num("gen-temperature", s.temperature ?? 1, "0.1", "0", "100");
  const topk = num("gen-topk", s.top_k || 0, "1", "0");
  const topp = num("gen-topp", s.top_p || 0, "0.05", "0", "1");
  const seed = num("gen-seed", 42, "1", "0");
  const tokens = num("gen-tokens", Math.min(s.tokens || 200, run.max_tokens), "1", "1", run.max_tokens);
  const beam = num("gen-beam", 1, "1", "1", "8");
  const out = el("pre", { id: "gen-output" });
  const stats = el("div", { id: "gen-stats", class: "muted" });
  const go = el("button", { class: "primary", id: "gen-go" }, translating ? "Translate" : "Generate");
  const stop = el("button", { id: "gen-stop", disabled: true }, "Stop");
  let ctl = null;
  go.addEventListener("click", () => work(generate()));
  async function generate() {
    ctl = new AbortController();
    go.disabled = true; stop.disabled = false;
    out.replaceChildren(el("span", { class: "prompt" }, prompt.value + (translating ? "\n→ " : "")));
    const gen = el("span", { class: "gen" });
    out.append(gen);
    stats.textContent = "generating…";
    const body = translating ?
      { id: run.id, prompt: prompt.value, tokens: +tokens.value, beam: +beam.value } :
      { id: run.id, prompt: prompt.value, tokens: +tokens.value, temperature: +temp.value, top_k: +topk.value, top_p: +topp.value, seed: +seed.value };
    let n = 0, pending = "", frame = 0;
    // Tokens are shown once per frame: a small model draws thousands a
    // second, more DOM updates than a page can take.
    const flush = () => {
      if (frame) cancelAnimationFrame(frame);
      frame = 0;
      if (!pending) return;
      gen.append(pending); pending = "";
      out.scrollTop = out.scrollHeight; stats.textContent = n + " tokens";
    };
    const t0 = performance.now();
    try {
      const r = await fetch("/api/generate", { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" }, signal: ctl.signal });
      if (!r.ok) { const e = await r.json().catch(() => ({ error: r.statusText })); throw new Error(e.error); }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const msg = buf.slice(0, cut); buf = buf.slice(cut + 2);
          const ev = /^event: (.*)$/m.exec(msg), data = /^data: (.*)$/m.exec(msg);
          if (!ev || !data) continue;
          const d = JSON.parse(data[1]);
          if (ev[1] === "token") { pending += d; n++; if (!frame) frame = requestAnimationFrame(flush); }
          else if (ev[1] === "done") {
            flush();
            const took = STILL ? "" : " in " + d.seconds.toFixed(2) + " s";
            stats.textContent = translating ? d.tokens + " words" + took +
              (d.stopped ? ": " + d.stopped : ", log p " + d.log_p.toFixed(3) + "; the model read: " + d.source.join(" ")) :
              d.tokens + " tokens" + took + (STILL ? "" : " (" + Math.round(d.tokens_per_s) + " tokens/s)") + (d.stopped ? ": " + d.stopped : "");
          }
          else if (ev[1] === "error") throw new Error(d.error);
        }
      }
    } catch (e) {
      flush();
      if (e.name === "AbortError") stats.textContent = "stopped after " + n + " tokens (" + ((performance.now() - t0) / 1000).toFixed(1) + " s)";
      else { stats.textContent = ""; out.append(el("div", { class: "error" }, e.message)); }
    } finally {
      // One text node, however the frames cut it: the same text is then
      // laid out the same (each node is shaped on its own).
      gen.normalize();
      go.disabled = false; stop.disabled = true; ctl = null;
    }
  }
  stop.addEventListener("click", () => ctl && ctl.abort());
  if (translating) {
    return el("div", {}, prompt,
      el("div", { class: "toolbar" }, el("label", {}, "beam ", beam), el("span", { class: "muted" }, "1 = greedy"), go, stop),
      out, stats);
  }
  return el("div", {}, prompt,
    el("div", { class: "toolbar" },
      el("label", {}, "temperature ", temp), el("label", {}, "top-k ", topk), el("label", {}, "top-p ", topp),
      el("label", {}, "seed ", seed), el("label", {}, "tokens ", tokens), go, stop),
    out, stats);
}

// viridis, as gptg attention draws its heatmaps: 0 dark purple, 1 yellow.
const VIRIDIS = [[0x44, 0x01, 0x54], [0x3b, 0x52, 0x8b], [0x21, 0x91, 0x8c], [0x5e, 0xc9, 0x62], [0xfd, 0xe7, 0x25]];
function viridis(v) {
  if (!(v >= 0)) v = 0;
  if (v > 1) v = 1;
  const x = v * (VIRIDIS.length - 1), i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
  const a = VIRIDIS[i], b = VIRIDIS[i + 1];
  return "rgb(" + a.map((c, k) => Math.round(c + (b[k] - c) * f)).join(",") + ")";
}

// A space and a newline get a visible stand-in, a BPE piece's leading
// space too (" the" is "·the").
function showToken(t) { return t.replace(/ /g, "·").replace(/\n/g, "¶"); }

// explorer: a text in, a grid of blocks × heads out. Each cell shows the
// head's whole (T, T) map in small with the row of the focused token
// framed, and that row below as a strip; hovering (or tapping) a token
// focuses it, clicking a cell draws its map large with the tokens.
// Above the grid, the block × head summary: each head's entropy and mean
// distance as heat tables. A model of more than 16 heads (GPT-2's 144)
// gets no grid of stamps: the server answers the summary and one head's
// map, and clicking a head in the summary asks for that head's.
// A translation run has three views, each blocks × heads of (rows, cols)
// maps: the cross-attention alignment (target words being written ×
// source words), the encoder's and the decoder's self-attention.
function explorer(run) {
  const translating = run.arch === "encoder-decoder";
  const text = el("input", { type: "text", id: "att-text", size: 40 });
  // The run's own example (its training text's start) when it recorded
  // one; an older run's sample prompt and a phrase otherwise.
  text.value = ((run.sample && run.sample.prompt) || "").trim() ? run.sample.prompt + " " : "";
  text.value = run.example || (text.value + "the king is dead").slice(0, run.context || 64);
  const target = el("input", { type: "text", id: "att-target", size: 30, placeholder: "target (default: the model's own translation)" });
  const view = el("select", { id: "att-view" }, el("option", { value: "cross" }, "cross-attention (alignment)"),
    el("option", { value: "encoder" }, "encoder self-attention"), el("option", { value: "decoder" }, "decoder self-attention"));
  if (translating) text.value = run.example || "";
  // A link may name the text and the head: /run?id=...&text=...&head=B.H
  const asked = new URLSearchParams(location.search);
  if (asked.get("text")) text.value = asked.get("text");
  const go = el("button", { class: "primary", id: "att-go" }, "Show");
  const toks = el("div", { class: "tokens", id: "att-tokens" });
  const grid = el("div", { class: "att-grid", id: "att-grid" });
  const big = el("div", { class: "att-big", id: "att-big" });
  const note = el("div", { class: "muted" });
  const summary = el("div", { class: "att-summary", id: "att-summary" });
  // data: rows (the tokens looking), cols (those looked at), maps[b][h]
  // row-major rows × cols, heads, blocks; raw: the server's answer.
  let data = null, raw = null, focus = 0, chosen = null;

  function drawCell(canvas, strip, m, n, k) {
    const px = Math.max(2, Math.floor(120 / Math.max(n, k)));
    canvas.width = k * px; canvas.height = n * px;
    const g = canvas.getContext("2d");
    for (let i = 0; i < n; i++) for (let j = 0; j < k; j++) { g.fillStyle = viridis(m[i * k + j]); g.fillRect(j * px, i * px, px, px); }
    g.strokeStyle = "#ff3b30"; g.lineWidth = 2; g.strokeRect(1, focus * px + 1, k * px - 2, px - 2);
    strip.width = k * px; strip.height = 10;
    const s = strip.getContext("2d");
    for (let j = 0; j < k; j++) { s.fillStyle = viridis(m[focus * k + j]); s.fillRect(j * px, 0, px, 10); }
  }
  // drawSummary lays out the summary's two heat tables, the chosen head
  // framed; each table's colours run from its smallest to its largest.
  function drawSummary() {
    if (!raw || raw.translation || !raw.summary) { summary.replaceChildren(); return; }
    const tables = [["entropy, bits", 0, 2], ["mean distance back, positions", 1, 1]].map(([title, k, digits]) => {
      let lo = Infinity, hi = -Infinity;
      raw.summary.forEach((r) => r.forEach((s) => { if (s[k] !== null) { lo = Math.min(lo, s[k]); hi = Math.max(hi, s[k]); } }));
      const span = hi > lo ? hi - lo : 1;
      return el("table", { class: "att-heat" }, el("caption", {}, title),
        el("thead", {}, el("tr", {}, el("th", {}, "block ↓ head →"), raw.summary[0].map((_, h) => el("th", {}, String(h))))),
        el("tbody", {}, raw.summary.map((r, b) => el("tr", {}, el("th", {}, String(b)), r.map((s, h) => {
          const v = s[k], f = v === null ? 0 : (v - lo) / span;
          return el("td", { class: "att-head" + (chosen && chosen[0] === b && chosen[1] === h ? " selected" : ""), "data-block": b, "data-head": h,
            style: "background:" + viridis(f) + ";color:" + (f > 0.55 ? "#000" : "#fff"),
            title: "block " + b + ", head " + h + ": entropy " + (s[0] === null ? "–" : s[0].toFixed(3)) + " bits, mean distance " + (s[1] === null ? "–" : s[1].toFixed(2)),
            onclick: () => pick(b, h) }, v === null ? "–" : v.toFixed(digits));
        })))));
    });
    summary.replaceChildren(el("div", { class: "muted" }, "each head over the text, averaged over the positions that look: the entropy of its weights (0 bits: one position; log2 k: k positions evenly) and how far back it looks; click a head"),
      el("div", { class: "att-heat-row" }, tables));
  }
  // pick chooses a head: drawn at once when the answer has every map,
  // asked for otherwise.
  function pick(b, h) {
    if (data.maps) {
      chosen = [b, h];
      grid.querySelectorAll(".att-cell").forEach((c) => c.classList.toggle("selected", +c.dataset.block === b && +c.dataset.head === h));
      drawSummary(); drawBig();
    } else work(load(b + "." + h));
  }
  function drawGrid() {
    if (!data.maps) { toks.querySelectorAll(".tok").forEach((t, i) => t.classList.toggle("active", i === focus)); if (chosen) drawBig(); return; }
    const n = data.rows.length, k = data.cols.length;
    grid.style.gridTemplateColumns = "repeat(" + data.heads + ", minmax(130px, 1fr))";
    grid.dataset.focus = focus;
    grid.querySelectorAll(".att-cell").forEach((cell) => {
      const b = +cell.dataset.block, h = +cell.dataset.head;
      drawCell(cell.querySelector("canvas.map"), cell.querySelector("canvas.strip"), data.maps[b][h], n, k);
    });
    toks.querySelectorAll(".tok").forEach((t, i) => t.classList.toggle("active", i === focus));
    if (chosen) drawBig();
  }
  function drawBig() {
    const [b, h] = chosen, n = data.rows.length, k = data.cols.length, m = data.maps ? data.maps[b][h] : raw.map;
    // Up to 70 tokens the map is at most 560 pixels wide, in cells of 8
    // or more; beyond, it fits 1,024 pixels, and cells under 8 pixels
    // (past 128 tokens) get no labels: hovering a cell names its tokens.
    const cell = Math.max(n > 70 || k > 70 ? 1 : 8, Math.min(24, Math.floor((n > 70 || k > 70 ? 1024 : 560) / Math.max(n, k))));
    const c = el("canvas", { id: "att-big-map" });
    const g = c.getContext("2d");
    const font = Math.min(12, cell) + "px monospace";
    g.font = font;
    const lay = cell < 8 ? { x0: 0, y0: 0, rows: [], cols: [] } : mapLabels(g, data.rows, data.cols, cell);
    const x0 = lay.x0, y0 = lay.y0;
    c.width = x0 + k * cell; c.height = y0 + n * cell; // resizing resets the context
    g.fillStyle = "#fff"; g.fillRect(0, 0, c.width, c.height);
    g.font = font; g.fillStyle = "#333"; g.textBaseline = "middle";
    g.textAlign = "right";
    lay.rows.forEach((l) => g.fillText(l.text, l.x + l.w, l.y + l.h / 2));
    lay.cols.forEach((l) => {
      if (lay.upright) { g.textAlign = "center"; g.fillText(l.text, l.x + l.w / 2, l.y + l.h / 2); return; }
      g.save(); g.translate(l.x + l.w / 2, l.y + l.h); g.rotate(-Math.PI / 2); g.textAlign = "left"; g.fillText(l.text, 0, 0); g.restore();
    });
    for (let i = 0; i < n; i++) for (let j = 0; j < k; j++) { g.fillStyle = viridis(m[i * k + j]); g.fillRect(x0 + j * cell, y0 + i * cell, cell, cell); }
    g.strokeStyle = "#ff3b30"; g.lineWidth = 2; g.strokeRect(x0 + 1, y0 + focus * cell + 1, k * cell - 2, Math.max(cell - 2, 1));
    // Where the cells start, for a test hovering them; the labels as drawn.
    Object.assign(c.dataset, { x0, y0, cell });
    c.labels = lay;
    const hint = "row: the position that looks; column: the position it looks at";
    c.title = hint;
    // Hovering a cell tells its weight; hovering a label, its whole word
    // (a long one is cut to fit the margin).
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect(), s = c.width / r.width, x = (e.clientX - r.left) * s, y = (e.clientY - r.top) * s;
      const i = Math.floor((y - y0) / cell), j = Math.floor((x - x0) / cell);
      if (i >= 0 && j >= 0 && i < n && j < k) c.title = JSON.stringify(data.rows[i]) + " → " + JSON.stringify(data.cols[j]) + ": " + m[i * k + j].toFixed(4);
      else if (x < x0 && i >= 0 && i < n) c.title = "row " + i + ": " + JSON.stringify(data.rows[i]);
      else if (y < y0 && j >= 0 && j < k) c.title = "column " + j + ": " + JSON.stringify(data.cols[j]);
      else c.title = hint;
    });
    big.replaceChildren(el("div", {}, el("strong", {}, "block " + b + ", head " + h), el("span", { class: "muted" }, "  rows: the token that looks; columns: the token it looks at; each row sums to 1")), c);
  }
  // show lays out the chosen view of the last answer.
  function show() {
    if (raw.translation) {
      const v = raw.views[view.value];
      data = { rows: v.rows, cols: v.cols, maps: v.maps, blocks: v.maps.length, heads: raw.heads };
      note.textContent = (raw.translated ? "the model's translation: " : "target: ") + raw.target.slice(1).join(" ") + " — " +
        data.blocks + " blocks × " + data.heads + " heads; rows: " + (view.value === "cross" ? "the target word being written" : "the word looking") +
        ", columns: the word looked at; hover a row's word, click a head";
    } else {
      data = { rows: raw.tokens, cols: raw.tokens, maps: raw.maps, blocks: raw.blocks, heads: raw.heads };
      const n = raw.tokens.length;
      note.textContent = raw.blocks + " blocks × " + raw.heads + " heads over " + n + " tokens" + (raw.dropped ? " (the first " + raw.dropped + " dropped: the context is " + n + ")" : "") + (raw.mask ? ", causal" : ", no mask") +
        (raw.maps ? "; hover a token, click a head" : "; " + raw.blocks * raw.heads + " heads: pick one in the summary, hover a token");
    }
    focus = data.rows.length - 1;
    toks.replaceChildren(...data.rows.map((t, i) => el("span", { class: "tok", "data-i": i, title: JSON.stringify(t),
      onmouseenter: () => { focus = i; drawGrid(); }, onclick: () => { focus = i; drawGrid(); } }, showToken(t))));
    const cells = [];
    for (let b = 0; b < data.blocks; b++) for (let h = 0; h < data.heads; h++) {
      cells.push(el("div", { class: "att-cell", "data-block": b, "data-head": h, onclick: () => pick(b, h) }, el("div", { class: "lbl" }, "block " + b + " · head " + h), el("canvas", { class: "map" }), el("canvas", { class: "strip" })));
    }
    grid.replaceChildren(...(data.maps ? cells : []));
    chosen = raw.head || null; big.replaceChildren();
    drawSummary();
    drawGrid();
  }
  // load runs the model on the text; head ("B.H") asks for that head's
  // map beside the summary.
  async function load(head) {
    note.textContent = "running the model…";
    try {
      raw = await getJSON("/api/attention?id=" + encodeURIComponent(run.id) + "&text=" + encodeURIComponent(text.value) +
        (translating && target.value.trim() ? "&target=" + encodeURIComponent(target.value) : "") + (typeof head === "string" ? "&head=" + head : ""));
    } catch (e) { note.textContent = ""; note.append(el("span", { class: "error" }, e.message)); return; }
    show();
  }
  go.addEventListener("click", () => work(load()));
  view.addEventListener("change", () => { if (raw) show(); });
  text.addEventListener("keydown", (e) => { if (e.key === "Enter") work(load()); });
  target.addEventListener("keydown", (e) => { if (e.key === "Enter") work(load()); });
  // Loaded once the explorer is on the page (the next task).
  if (run.has_model && text.value.trim()) work(new Promise((resolve) => setTimeout(resolve, 0)).then(() => load(/^\d+\.\d+$/.test(asked.get("head") || "") ? asked.get("head") : undefined)));
  else if (run.has_model) note.textContent = "type a sentence and press Show";
  else note.textContent = "no model file yet: train writes model.safetensors at the first evaluation or checkpoint";
  return el("div", {}, el("div", { class: "toolbar" }, text, translating ? target : null, translating ? view : null, go), note, toks, summary, grid, big);
}

// LABEL_MAX is the widest a big attention map's label may be, in pixels
// (16 characters of its 12-pixel monospace font): a longer word is cut.
const LABEL_MAX = 116;

// mapLabels lays out the labels of a big attention map of cells of cell
// pixels, in g's font (of at most cell pixels): the rows' words
// right-aligned in a left margin; the columns' words above the map,
// centred on their columns when every one fits its cell, else written
// upward, a cell wide each, so that neighbours never overlap however many
// columns a long sentence has. Each margin is as wide as its longest word,
// up to LABEL_MAX; a longer word is cut with "…" (hovering it shows it
// whole). Returns the margins (x0, y0: where the cells start), whether the
// columns' words are upright, and every label's text and box (x, y, w, h:
// the page's pixels it covers, upright or not).
function mapLabels(g, rows, cols, cell) {
  const size = parseFloat(g.font) || 12, gap = 4;
  const fit = (t) => {
    let s = showToken(t);
    if (g.measureText(s).width <= LABEL_MAX) return s;
    while (s.length > 1 && g.measureText(s + "…").width > LABEL_MAX) s = s.slice(0, -1);
    return s + "…";
  };
  const rowText = rows.map(fit), colText = cols.map(fit);
  const rowW = rowText.map((s) => Math.ceil(g.measureText(s).width)), colW = colText.map((s) => Math.ceil(g.measureText(s).width));
  const x0 = Math.max(0, ...rowW) + 2 * gap;
  const upright = colW.every((w) => w <= cell - 2);
  const y0 = (upright ? size : Math.max(0, ...colW)) + 2 * gap;
  return {
    x0, y0, upright,
    rows: rowText.map((text, i) => ({ text, x: x0 - gap - rowW[i], y: y0 + i * cell + (cell - size) / 2, w: rowW[i], h: size })),
    cols: colText.map((text, j) => upright ?
      { text, x: x0 + j * cell + (cell - colW[j]) / 2, y: gap, w: colW[j], h: size } :
      { text, x: x0 + j * cell + (cell - size) / 2, y: y0 - gap - colW[j], w: size, h: colW[j] }),
  };
}

// ---- compare page -------------------------------------------------------

// The compare table's columns: summary.csv's, with the mean ± sd and the
// paired difference with its interval each in one cell, as summary.md has them.
const COMPARE_COLUMNS = [
  { label: "variant", cell: (g) => g("name") + (g("baseline") === "true" ? " (baseline)" : "") },
  { label: "differs", cell: (g) => g("differs") },
  { label: "seeds", num: true, cell: (g) => g("n") + (g("runs") ? "/" + g("runs") : "") },
  { label: "params", num: true, cell: (g) => g("params") },
  { label: "steps", num: true, cell: (g) => g("steps") },
  { label: "tokens/s", num: true, cell: (g) => (STILL ? "" : g("tokens_per_s")) },
  { label: "train loss", num: true, cell: (g) => g("train_loss_mean") },
  { label: "test loss (mean ± sd)", num: true, cell: (g) => g("test_loss_mean") + (g("test_loss_sd") ? " ± " + g("test_loss_sd") : "") },
  { label: "Δ test vs baseline (95 % CI)", num: true, cell: (g) => g("baseline") === "true" ? "baseline" : !g("test_diff") ? "" :
      signed(g("test_diff")) + (g("test_diff_lo") ? " [" + signed(g("test_diff_lo")) + ", " + signed(g("test_diff_hi")) + "]" +
      (+g("test_diff_lo") <= 0 && +g("test_diff_hi") >= 0 ? " includes 0" : "") : "") },
  { label: "failed / not finished", cell: (g) => [g("failed"), g("not_finished")].filter((x) => x).join("; ") },
];
function signed(s) { const v = +s; return (v < 0 ? "−" : "+") + Math.abs(v).toFixed(4); }

async function comparePage(id) {
  crumbs(el("a", { href: "/" }, "runs"), el("span", {}, id));
  let c;
  try { c = await getJSON("/api/compare?id=" + encodeURIComponent(id)); } catch (e) {
    mount(el("h1", {}, id), el("p", { class: "error" }, e.message));
    return;
  }
  const idx = Object.fromEntries(c.header.map((h, i) => [h, i]));
  const table = el("table", { id: "compare-table" },
    el("thead", {}, el("tr", {}, COMPARE_COLUMNS.map((col) => el("th", { class: col.num ? "num" : "" }, col.label)))),
    el("tbody", {}, c.rows.map((r) => {
      const g = (name) => (idx[name] === undefined ? "" : r[idx[name]] || "");
      return el("tr", {}, COMPARE_COLUMNS.map((col, k) => el("td", { class: (col.num ? "num" : "") + (k === 1 ? " differs" : "") },
        k === 1 ? g("differs").split(" ").filter((d) => d).map((d) => el("code", {}, d)) : col.cell(g))));
    })));
  const chartBox = el("div", { id: "compare-chart", class: "chart" });
  const legend = el("div", { class: "legend" });
  const logBox = el("input", { type: "checkbox", id: "compare-log" });
  mount(el("h1", {}, id + " ", el("span", { class: "muted" }, "(gptg " + c.kind + ")")),
    c.note ? el("p", { class: "muted" }, c.note) : null,
    el("div", { class: "panel wide" }, c.rows.length ? table : el("p", { class: "muted" }, "no table")),
    el("div", { class: "panel" }, el("div", { class: "toolbar" }, el("strong", {}, "Mean training loss over seeds (line, band ±1 sd) and mean test loss (points)"), el("label", {}, logBox, " log scale")), legend, chartBox),
    el("h2", {}, "Runs"),
    el("ul", {}, c.variants.map((v) => el("li", {}, el("strong", {}, v.name), ": ", v.runs.length + " of " + v.planned + " runs ",
      v.runs.map((r) => el("a", { href: "/run?id=" + encodeURIComponent(r), style: "margin-right:.6em" }, r.split("/").slice(-1)[0]))))));
  legend.replaceChildren(...c.variants.map((v, k) => el("span", { style: "--c:" + PALETTE[k % PALETTE.length] }, v.name)));
  function draw() {
    chartBox.replaceChildren();
    const tables = [], series = [{ label: "step" }], bands = [];
    c.variants.forEach((v, k) => {
      const col = PALETTE[k % PALETTE.length];
      const lo = v.train.mean.map((m, i) => m - v.train.sd[i]), hi = v.train.mean.map((m, i) => m + v.train.sd[i]);
      tables.push([v.train.step, v.train.mean, hi, lo]);
      const base = series.length;
      series.push({ label: v.name + " train", stroke: col, width: 1.5, spanGaps: true, points: { show: false } },
        { label: v.name + " +sd", stroke: "transparent", spanGaps: true, points: { show: false } },
        { label: v.name + " −sd", stroke: "transparent", spanGaps: true, points: { show: false } });
      bands.push({ series: [base + 1, base + 2], fill: col + "33" });
      tables.push([v.test.step, v.test.mean]);
      series.push({ label: v.name + " test", stroke: col, fill: col, paths: () => null, points: { show: true, size: 7, fill: col } });
    });
    const nonEmpty = tables.map((t) => (t[0].length ? t : [[0], ...t.slice(1).map(() => [null])]));
    const data = nonEmpty.length ? uPlot.join(nonEmpty) : [[]];
    new uPlot({ width: Math.max(320, chartBox.clientWidth - 10), height: 340, series, bands, legend: { show: false },
      scales: { x: { time: false }, y: logBox.checked ? { distr: 3 } : {} }, axes: [{ label: "step" }, { label: "loss" }] }, data, chartBox);
    chartBox.dataset.points = data[0].length;
  }
  draw();
  logBox.addEventListener("change", draw);
}

// ---- router -------------------------------------------------------------

const q = new URLSearchParams(location.search);
if (location.pathname === "/run" && q.get("id")) work(runPage(q.get("id")));
else if (location.pathname === "/compare" && q.get("id")) work(comparePage(q.get("id")));
else work(runsPage());
