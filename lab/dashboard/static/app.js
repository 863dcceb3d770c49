// The lab dashboard: polls the JSON API (lab/dashboard) and draws with uPlot.
// window.lhcnpDashboard exposes the charts and the last responses (the
// browser test reads them).
"use strict";

(function () {
  const state = {
    charts: {},
    queues: null,      // last /api/queues
    queue: null,       // last /api/queue
    selected: null,    // {target, interface, queue}
    updates: 0,
    errors: 0,
    refreshMs: 2000,
    windowS: 300,
    from: 0,
    to: 0,
  };
  window.lhcnpDashboard = state;

  const $ = (sel) => document.querySelector(sel);
  const key = (q) => `${q.target}|${q.interface}|${q.queue}`;

  function si(v, unit) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    const p = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]].find(([f]) => a >= f);
    const s = p ? (v / p[0]).toFixed(a / p[0] >= 100 ? 0 : 1) + " " + p[1] : (Number.isInteger(v) ? String(v) : v.toFixed(2)) + " ";
    return s + (unit || "");
  }

  function fmtTime(t) {
    return new Date(t * 1000).toLocaleTimeString();
  }

  // Changed settings of a decision, "alpha 0.5 → 0.25".
  function change(a) {
    const b = a.before || {}, f = a.after || {};
    const keys = new Set([...Object.keys(b), ...Object.keys(f)]);
    const parts = [];
    for (const k of keys) {
      if (JSON.stringify(b[k]) !== JSON.stringify(f[k])) parts.push(`${k} ${b[k] ?? "–"} → ${f[k] ?? "–"}`);
    }
    return parts.join(", ") || "none";
  }

  // Vertical lines at the tuner's decisions, through uPlot's draw hook.
  function decisionMarkers() {
    return {
      hooks: {
        draw: [(u) => {
          const acts = (state.queue && state.queue.tuner) || [];
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "rgba(140, 60, 200, 0.7)";
          ctx.setLineDash([4, 4]);
          ctx.lineWidth = 1.5;
          for (const a of acts) {
            const x = Math.round(u.valToPos(a.t, "x", true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        }],
      },
    };
  }

  function width(el) {
    return Math.max(300, el.clientWidth || 600);
  }

  function makeChart(name, series, extraScales, extraAxes) {
    const el = $("#chart-" + name);
    const opts = {
      width: width(el),
      height: 220,
      cursor: { sync: { key: "lhcnp" } },
      scales: Object.assign({
        x: { time: true, range: () => [state.from, state.to] },
      }, extraScales || {}),
      axes: [{}, { size: 70, values: (u, vals) => vals.map((v) => si(v)) }].concat(extraAxes || []),
      series: [{}].concat(series),
      plugins: [decisionMarkers()],
    };
    const data = [[]].concat(series.map(() => []));
    const chart = new uPlot(opts, data, el);
    state.charts[name] = chart;
    return chart;
  }

  function line(label, stroke, extra) {
    return Object.assign({ label, stroke, width: 1.5, spanGaps: true, value: (u, v) => si(v) }, extra || {});
  }

  function createCharts() {
    makeChart("depth", [
      line("depth", "#1f77b4", { fill: "rgba(31,119,180,0.1)" }),
      line("K_min", "#2ca02c", { dash: [6, 4] }),
      line("K_max", "#d62728", { dash: [6, 4] }),
    ]);
    makeChart("growth", [
      line("growth (B/s)", "#ff7f0e"),
      line("ECN marking (%)", "#8c564b", { scale: "%" }),
    ], { "%": { range: [0, 100] } }, [{ scale: "%", side: 1, grid: { show: false } }]);
    makeChart("rates", [
      line("queue out (b/s)", "#1f77b4"),
      line("port rate (b/s)", "#7f7f7f", { dash: [6, 4] }),
      line("flows' arrival (b/s)", "#9467bd"),
    ]);
    makeChart("notifications", [
      line("NOTIFY", "#1f77b4"),
      line("RATE_REDUCE", "#ff7f0e"),
      line("PAUSE", "#d62728"),
      line("RESUME", "#2ca02c"),
    ]);
    makeChart("tuner", [
      line("alpha", "#17becf", { paths: uPlot.paths.stepped({ align: 1 }) }),
      { label: "decision", stroke: "#8c3cc8", width: 0, paths: () => null,
        points: { show: true, size: 10, fill: "#8c3cc8" }, value: (u, v) => (v === null ? "–" : v) },
    ]);
    window.addEventListener("resize", () => {
      for (const [name, c] of Object.entries(state.charts)) c.setSize({ width: width($("#chart-" + name)), height: 220 });
    });
  }

  // align merges column sets with different time axes into uPlot's layout:
  // one sorted x array, every series null where it has no sample.
  function align(sets) {
    const ts = new Set();
    for (const s of sets) for (const t of s.t) ts.add(t);
    const x = [...ts].sort((a, b) => a - b);
    const index = new Map(x.map((t, i) => [t, i]));
    const out = [x];
    for (const s of sets) {
      for (const col of s.cols) {
        const arr = new Array(x.length).fill(null);
        s.t.forEach((t, i) => { arr[index.get(t)] = col[i]; });
        out.push(arr);
      }
    }
    return out;
  }

  function decisionY(a, alpha) {
    const pick = (o) => (o && typeof o.alpha === "number" ? o.alpha : null);
    let y = pick(a.after) ?? pick(a.before);
    if (y === null) {
      // The last alpha reported before the decision.
      for (let i = alpha.t.length - 1; i >= 0; i--) {
        if (alpha.t[i] <= a.t && alpha.values.alpha[i] !== null) { y = alpha.values.alpha[i]; break; }
      }
    }
    return y ?? 0;
  }

  function drawQueue(q) {
    state.from = q.from;
    state.to = Math.max(q.to, ...q.tuner.map((a) => a.t));
    const c = q.congestion;
    state.charts.depth.setData([c.t, c.values.depth, c.values.kmin, c.values.kmax]);
    state.charts.growth.setData([c.t, c.values.growth, c.values.emr]);
    state.charts.rates.setData(align([
      { t: q.rates.t, cols: [q.rates.values.queue_bps, q.rates.values.port_bps] },
      { t: q.flows.t, cols: [q.flows.values.arrival_bps] },
    ]));
    const n = q.notifications;
    state.charts.notifications.setData([n.t, n.values.NOTIFY, n.values.RATE_REDUCE, n.values.PAUSE, n.values.RESUME]);
    state.charts.tuner.setData(align([
      { t: q.alpha.t, cols: [q.alpha.values.alpha] },
      { t: q.tuner.map((a) => a.t), cols: [q.tuner.map((a) => decisionY(a, q.alpha))] },
    ]));
    $("#charts-title").textContent = `Queue ${q.queue} of ${q.interface} on ${q.target}`;
  }

  function drawQueues(resp) {
    const sel = $("#queue-select");
    const tbody = $("#queues tbody");
    const keys = resp.queues.map(key);
    if (sel.dataset.keys !== keys.join(",")) {
      sel.innerHTML = "";
      for (const q of resp.queues) {
        const o = document.createElement("option");
        o.value = key(q);
        o.textContent = `${q.target} ${q.interface} q${q.queue}`;
        sel.appendChild(o);
      }
      sel.dataset.keys = keys.join(",");
    }
    if (!state.selected && resp.queues.length > 0) {
      // Start with the busiest queue: most notifications, then deepest.
      const busiest = [...resp.queues].sort((a, b) =>
        ((b.notifications || 0) - (a.notifications || 0)) || ((b.peak_queue_depth_bytes || 0) - (a.peak_queue_depth_bytes || 0)))[0];
      state.selected = { target: busiest.target, interface: busiest.interface, queue: busiest.queue };
    }
    if (state.selected) sel.value = key(state.selected);
    // The busy queues, unless asked for all: a lab has eight queues on
    // every interface of every switch, most of them idle.
    const all = $("#all-queues").checked;
    const busy = (q) => (q.notifications || 0) > 0 || (q.peak_queue_depth_bytes || 0) > (q.kmin_bytes || 0) / 10;
    const shown = resp.queues.filter((q) => all || busy(q) || (state.selected && key(q) === key(state.selected)));
    $("#queues-count").textContent = `${shown.length} of ${resp.queues.length} queues`;
    tbody.innerHTML = "";
    for (const q of shown) {
      const tr = document.createElement("tr");
      if (state.selected && key(q) === key(state.selected)) tr.className = "selected";
      const cells = [
        [q.target, "text"], [q.interface, "text"], [q.queue], [si(q.queue_depth_bytes, "B")],
        [si(q.kmin_bytes, "B")], [si(q.kmax_bytes, "B")], [si(q.growth_rate_bytes_per_second, "B/s")],
        [q.congestion_level ?? "–"], [q.alpha ?? "–"], [q.notifications ?? "–"],
      ];
      for (const [v, cls] of cells) {
        const td = document.createElement("td");
        td.textContent = v;
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
      tr.addEventListener("click", () => select({ target: q.target, interface: q.interface, queue: q.queue }));
      tbody.appendChild(tr);
    }
    const tt = $("#tuner tbody");
    tt.innerHTML = "";
    for (const a of resp.tuner) {
      const tr = document.createElement("tr");
      tr.className = "decision";
      const cells = [
        [fmtTime(a.t), "text"], [a.target, "text"],
        [a.interface === null ? "–" : `${a.interface} q${a.queue}`, "text"],
        [a.outcome + (a.dry_run ? " (dry run)" : ""), "text outcome-" + a.outcome],
        [change(a), "text"], [(a.reason || "") + (a.error ? ` (${a.error})` : ""), "text"],
      ];
      for (const [v, cls] of cells) {
        const td = document.createElement("td");
        td.textContent = v;
        td.className = cls;
        tr.appendChild(td);
      }
      tt.appendChild(tr);
    }
  }

  async function getJSON(url) {
    const r = await fetch(url, { cache: "no-store" });
    if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
    return r.json();
  }

  async function refresh() {
    try {
      const qs = await getJSON("api/queues");
      state.queues = qs;
      drawQueues(qs);
      if (state.selected) {
        const s = state.selected;
        const url = `api/queue?target=${encodeURIComponent(s.target)}&interface=${encodeURIComponent(s.interface)}` +
          `&queue=${s.queue}&window=${state.windowS}`;
        const q = await getJSON(url);
        if (state.selected && key(q) === key(state.selected)) {
          state.queue = q;
          drawQueue(q);
        }
      }
      state.updates++;
      const st = $("#status");
      st.className = "status";
      st.textContent = state.selected ? `updated ${new Date().toLocaleTimeString()}` : "waiting for telemetry…";
    } catch (e) {
      state.errors++;
      const st = $("#status");
      st.className = "status error";
      st.textContent = String(e.message || e);
    }
  }

  function select(s) {
    state.selected = s;
    state.queue = null;
    refresh();
  }

  async function loop() {
    await refresh();
    setTimeout(loop, state.refreshMs);
  }

  async function start() {
    try {
      const cfg = await getJSON("api/config");
      state.refreshMs = cfg.refresh_ms;
      state.windowS = cfg.default_window_s;
      if (cfg.speed && cfg.speed !== 1) {
        $("#speed").textContent = `speed ${cfg.speed}: rates per simulated second`;
      }
    } catch (e) { /* the defaults do */ }
    const ws = $("#window-select");
    if (![...ws.options].some((o) => Number(o.value) === state.windowS)) {
      const o = document.createElement("option");
      o.value = String(state.windowS);
      o.textContent = `${state.windowS} s`;
      ws.appendChild(o);
    }
    ws.value = String(state.windowS);
    ws.addEventListener("change", () => { state.windowS = Number(ws.value); refresh(); });
    $("#all-queues").addEventListener("change", () => { if (state.queues) drawQueues(state.queues); });
    $("#queue-select").addEventListener("change", (ev) => {
      const [target, iface, queue] = ev.target.value.split("|");
      select({ target, interface: iface, queue: Number(queue) });
    });
    createCharts();
    loop();
  }

  start();
})();
