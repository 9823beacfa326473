// arignote dash: renders /api/state (embedded in the page at load, then polled). Read-only.
// Every value from the server goes into the page as text (textContent), never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const TOKEN = new URLSearchParams(location.search).get("token");
const INTERVAL = Math.max(0.5, parseFloat(document.body.dataset.interval) || 2);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, String(v));
    else node[k] = v;
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const na = (v) => v === null || v === undefined;
const short = (s, n = 90) => (na(s) ? "n/a" : String(s).length > n ? String(s).slice(0, n - 1) + "…" : String(s));

function bytes(n) {
  if (na(n)) return "n/a";
  if (n >= 1024 ** 3) return (n / 1024 ** 3).toFixed(1) + " GiB";
  return Math.round(n / 1024 ** 2) + " MiB";
}

function duration(s) {
  if (na(s) || typeof s !== "number" || !isFinite(s)) return "?";
  s = Math.max(0, Math.round(s));
  const pad = (x) => String(x).padStart(2, "0");
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + pad(s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h" + pad(Math.floor((s % 3600) / 60)) + "m";
  return Math.floor(s / 86400) + "d" + pad(Math.floor((s % 86400) / 3600)) + "h";
}

function clock(t) {
  if (na(t)) return "?";
  return new Date(t * 1000).toLocaleTimeString([], { hour12: false });
}

function num(v) {
  if (typeof v === "string") return v; // "NaN", "Infinity" as the record keeps them
  if (na(v) || typeof v !== "number") return "?";
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toFixed(4);
}

function bar(fraction, label) {
  const f = Math.max(0, Math.min(1, fraction || 0));
  const fill = el("span");
  fill.style.width = (100 * f).toFixed(1) + "%";
  return el("div", { class: "bar" }, fill, el("em", {}, label));
}

function fill(tbody, rows, columns, empty) {
  tbody.replaceChildren();
  if (!rows.length) {
    tbody.append(el("tr", { class: "empty" }, el("td", { colSpan: columns }, empty)));
    return;
  }
  for (const r of rows) tbody.append(r);
}

// ------------------------------------------------------------------ GPUs, leases, queue

function gpuRow(g) {
  const used = g.memory_used, total = g.memory_total;
  const memory = na(total) ? el("span", {}, bytes(used))
    : bar(na(used) ? 0 : used / total, bytes(used) + " / " + bytes(total));
  const util = na(g.utilization_gpu) ? "n/a" : bar(g.utilization_gpu / 100, g.utilization_gpu + "%");
  const procs = el("div");
  for (const p of g.processes || []) {
    const line = el("div", { class: "proc", "data-pid": p.pid },
      `${na(p.user) ? "n/a" : p.user} · pid ${p.pid} · ${bytes(p.gpu_memory)} · `,
      el("span", { class: "cmd", title: na(p.command) ? "" : p.command }, short(p.command, 60)));
    if (p.job) line.append(" → ", el("span", { class: "job" }, p.job.text));
    procs.append(line);
  }
  if (!(g.processes || []).length) procs.append(el("span", { class: "muted" }, "no processes"));
  const lease = (g.leases || []).map((x) => `${x.user} (pid ${x.pid}, ${duration(x.held_for)})`).join(", ");
  const power = na(g.power_draw) && na(g.power_limit) ? "n/a"
    : `${na(g.power_draw) ? "n/a" : Math.round(g.power_draw)}/${na(g.power_limit) ? "n/a" : Math.round(g.power_limit)} W`;
  return el("tr", { "data-gpu": g.index },
    el("td", { class: "num" }, g.index), el("td", {}, na(g.name) ? "n/a" : g.name), el("td", {}, memory),
    el("td", {}, util), el("td", { class: "num" }, na(g.temperature) ? "n/a" : g.temperature + "°C"),
    el("td", { class: "num" }, power), el("td", {}, lease || "–"), el("td", {}, procs));
}

function leaseRow(x) {
  return el("tr", { "data-lease": x.pid },
    el("td", { class: "num" }, na(x.gpu) ? "?" : x.gpu), el("td", {}, x.user), el("td", { class: "num" }, x.pid),
    el("td", { class: "num" }, duration(x.held_for)), el("td", { class: "cmd", title: x.command }, short(x.command)));
}

function queueRow(q, i) {
  const filters = [];
  if (!na(q.min_free_memory)) filters.push("≥ " + q.min_free_memory + " free");
  if (!na(q.max_utilization)) filters.push("≤ " + q.max_utilization + "% busy");
  return el("tr", { "data-queued": q.pid },
    el("td", { class: "num" }, i + 1), el("td", {}, q.user), el("td", { class: "num" }, q.pid),
    el("td", { class: "num" }, q.gpus), el("td", { class: "num" }, duration(q.waiting)),
    el("td", {}, filters.join(", ") || "–"), el("td", { class: "cmd", title: q.command }, short(q.command)));
}

// ------------------------------------------------------------------ run cards

function values(list) {
  return (list || []).map((v) => (typeof v === "number" && isFinite(v) ? v : null));
}

// One chart: a polyline per series over epochs 1..n, min/max labels on the y axis.
function chart(title, series) {
  const W = 320, H = 110, L = 42, R = 8, T = 14, B = 16;
  const all = series.flatMap((s) => s.values.filter((v) => v !== null));
  const n = Math.max(0, ...series.map((s) => s.values.length));
  const box = svg("svg", { class: "curve", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  box.append(svg("text", { x: L, y: 10 }, title + " per epoch"));
  if (!all.length) {
    box.append(svg("text", { x: L, y: H / 2 }, "no epoch finished yet"));
    return box;
  }
  let lo = Math.min(...all), hi = Math.max(...all);
  if (hi === lo) { hi += Math.abs(hi) * 0.05 || 1; lo -= Math.abs(lo) * 0.05 || 1; }
  const x = (i) => L + (n > 1 ? (i * (W - L - R)) / (n - 1) : (W - L - R) / 2);
  const y = (v) => T + ((hi - v) * (H - T - B)) / (hi - lo);
  box.append(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  box.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  box.append(svg("text", { x: 2, y: T + 8 }, num(hi)));
  box.append(svg("text", { x: 2, y: H - B }, num(lo)));
  box.append(svg("text", { x: L, y: H - 3 }, "1"));
  box.append(svg("text", { x: W - R - 14, y: H - 3 }, String(n)));
  series.forEach((s, k) => {
    const pts = s.values.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p) => p !== null);
    if (pts.length > 1) box.append(svg("polyline", { class: "s" + k, points: pts.join(" ") }));
    for (const p of pts) {
      const [cx, cy] = p.split(",");
      box.append(svg("circle", { class: "s" + k, cx, cy, r: 2.2 }));
    }
    box.append(svg("text", { class: "s" + k, x: W - R - 150 + 75 * k, y: 10 }, s.name));
  });
  return box;
}

function charts(run) {
  const h = run.history || {};
  const out = [];
  const loss = [["loss", values(h.loss)]];
  if (h.val_loss) loss.push(["val_loss", values(h.val_loss)]);
  out.push(chart("loss", loss.map(([name, v]) => ({ name, values: v }))));
  const metric = Object.keys(h).find((k) => !k.startsWith("val_") && k !== "loss" && !k.includes("_mib")
    && !k.includes("utilization") && !k.startsWith("lr"));
  if (metric) {
    const s = [{ name: metric, values: values(h[metric]) }];
    if (h["val_" + metric]) s.push({ name: "val_" + metric, values: values(h["val_" + metric]) });
    out.push(chart(metric, s));
  }
  return out;
}

function where(run) {
  if ((run.gpus || []).length) return "GPU " + run.gpus.join(", ");
  const devices = run.devices || [];
  if (devices.some((d) => String(d).startsWith("cuda"))) return devices.join(", ");
  return "CPU";
}

function runCard(run) {
  const state = run.state;
  const epochs = run.epochs || 0, steps = run.steps || 0;
  const epoch = na(run.epoch) ? 0 : run.epoch;
  const done = state === "finished" ? 1 : state === "running" || na(run.epochs_done)
    ? (epoch + (steps ? Math.min(1, (run.step || 0) / steps) : 0)) / (epochs || 1)
    : run.epochs_done / (epochs || 1);
  const progress = `epoch ${Math.min(epoch + 1, epochs)}/${epochs}` + (steps ? ` · step ${run.step || 0}/${steps}` : "");
  const facts = [];
  if (!na(run.samples_per_second)) facts.push(`${Math.round(run.samples_per_second).toLocaleString()} samples/s`);
  if (state === "running") facts.push("ETA " + duration(run.eta));
  facts.push("started " + clock(run.start));
  if (state === "running") facts.push("updated " + duration(run.age) + " ago");
  else if (!na(run.ended)) facts.push("ended " + clock(run.ended));
  const logs = Object.entries(run.logs && Object.keys(run.logs).length ? run.logs : last(run.history))
    .filter(([k]) => !k.includes("_mib") && !k.includes("utilization"))
    .map(([k, v]) => `${k} ${num(v)}`).join(" · ");
  const card = el("div", { class: "card " + state, "data-run": run.file, "data-state": state },
    el("h3", {}, run.script || "?", el("span", { class: "badge " + state }, state)),
    el("div", { class: "line muted" }, `${run.user} · pid ${run.pid} · ${run.host || ""} · ${where(run)}`),
    el("div", { class: "progress" }, bar(done, progress + " · " + Math.round(100 * done) + "%")),
    el("div", { class: "line" }, facts.join(" · ")));
  if (run.error) card.append(el("div", { class: "err" }, run.error));
  if (state === "running" && run.age > 120) {  // a record is rewritten every 2 s while steps run
    card.append(el("div", { class: "warn" }, `no update for ${duration(run.age)}: a very long step or `
      + "validation, or the process is stuck (or fit raised in a process that lives on)"));
  }
  if (logs) card.append(el("div", { class: "line" }, logs));
  for (const c of charts(run)) card.append(c);
  card.append(el("div", { class: "line cmd muted", title: run.command || "" }, short(run.command || "", 140)));
  return card;
}

function last(history) {
  const out = {};
  for (const [k, v] of Object.entries(history || {})) if (v.length) out[k] = v[v.length - 1];
  return out;
}

// ------------------------------------------------------------------ the page

function render(state) {
  document.getElementById("host").textContent = [state.hostname, state.driver_version && "driver " + state.driver_version,
    state.cuda_driver_version && "CUDA " + state.cuda_driver_version].filter(Boolean).join(" · ");
  document.getElementById("hostline").textContent = state.host_line || "";
  const nogpu = document.getElementById("nogpu");
  nogpu.hidden = !state.no_gpu;
  nogpu.textContent = state.no_gpu ? "No GPU present on this machine" + (state.nvml_error ? ` (${state.nvml_error})` : "")
    + ": showing the CPU runs." : "";
  const problems = state.problems || [];
  document.getElementById("problems-section").hidden = !problems.length;
  document.getElementById("problems").replaceChildren(...problems.map((p) =>
    el("li", { "data-problem": p.file }, p.file ? `${p.file}: ${p.problem}` : p.problem)));
  fill(document.querySelector("#gpus tbody"), (state.gpus || []).map(gpuRow), 8, "no GPU");
  fill(document.querySelector("#leases tbody"), (state.leases || []).map(leaseRow), 5, "no GPU is leased");
  fill(document.querySelector("#queue tbody"), (state.queue || []).map(queueRow), 7, "nobody is waiting");
  const runs = state.runs || [], recent = state.recent || [];
  document.getElementById("runs").replaceChildren(...(runs.length ? runs.map(runCard)
    : [el("p", { class: "muted" }, "no run in progress")]));
  document.getElementById("recent-title").textContent = `Finished, failed and stopped runs (last ${state.hours || "?"} h)`;
  document.getElementById("recent").replaceChildren(...(recent.length ? recent.map(runCard)
    : [el("p", { class: "muted" }, "none")]));
  document.getElementById("updated").textContent = "updated " + clock(state.time);
}

async function refresh() {
  const live = document.getElementById("live");
  try {
    const url = "api/state" + (TOKEN ? "?token=" + encodeURIComponent(TOKEN) : "");
    const response = await fetch(url, { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    live.textContent = "live";
    live.className = "live";
  } catch (err) {
    live.textContent = "connection lost (" + err.message + "), retrying";
    live.className = "live lost";
  }
}

try {
  render(JSON.parse(document.getElementById("state").textContent));
} catch (err) {
  document.getElementById("live").textContent = "cannot show the state: " + err.message;
}
setInterval(refresh, INTERVAL * 1000);
