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
    speed: 1,
    xMode: "wall",     // "wall": wall-clock time; "sim": simulated time since the window's start
    from: 0,
    to: 0,
    gaps: [],          // [from, to] Unix seconds where the switch published nothing (a restart)
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

  // si3 is si with three significant digits and no trailing zeros, as
  // the reasons' sizes and rates (ReadableReason): 1.25 GB/s, 125 MB/s.
  function si3(v, unit) {
    const a = Math.abs(v);
    const p = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]].find(([f]) => a >= f) || [1, ""];
    const x = v / p[0];
    return `${Math.abs(x) >= 100 ? Math.round(x) : Number(x.toPrecision(3))} ${p[1]}${unit}`;
  }

  const pad = (n) => String(n).padStart(2, "0");
  // ISO date and 24-hour time, in the browser's time zone.
  function isoDate(d) { return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`; }
  function hms(d) { return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`; }
  function fmtTime(t) {
    const d = new Date(t * 1000);
    return `${isoDate(d)} ${hms(d)}`;
  }

  // A duration in seconds with a unit: 250 ms, 1.5 s, 2 min.
  function fmtDuration(s) {
    const a = Math.abs(s);
    const r = (v) => (Math.abs(v) >= 10 ? Math.round(v) : Math.round(v * 10) / 10);
    if (a === 0) return "0 s";
    if (a < 1e-3) return r(s * 1e6) + " µs";
    if (a < 1) return r(s * 1e3) + " ms";
    if (a < 120) return r(s) + " s";
    return r(s / 60) + " min";
  }

  // The x value of a Unix time on the charts: itself, or simulated seconds
  // since the window's start.
  function xOf(t) { return state.xMode === "sim" ? (t - state.from) * state.speed : t; }

  // x axis labels: 24-hour times, the ISO date on the first label and where
  // the day changes; simulated seconds with their unit.
  function xLabels(u, splits) {
    if (state.xMode === "sim") return splits.map(fmtDuration);
    let day = "";
    return splits.map((t) => {
      const d = new Date(t * 1000);
      const date = isoDate(d);
      const label = date !== day ? `${hms(d)}\n${date}` : hms(d);
      day = date;
      return label;
    });
  }

  // A change's judgement (its judge window's objective J against the one
  // expected without it): "better" when kept with a lower J, "not worse"
  // when kept with one as high or higher (within the tolerance, or worse
  // through what the change cannot cost), "worse" when it was judged to
  // be undone, "kept, not compared" when kept without weighing the two (a
  // start); "–" when not judged (a hold, or a change refused, lost, or
  // undone before its judge window). Its class: judged-better,
  // judged-kept or judged-worse.
  function judgement(a) {
    const j = a.judgement;
    if (!j) return ["–", ""];
    const J = `J ${j.objective_before.toPrecision(3)} → ${j.objective_after.toPrecision(3)}`;
    if (j.not_compared) return [`kept, not compared: ${J}`, "judged-kept"];
    if (!j.keep) return [`worse: ${J}`, "judged-worse"];
    if (j.objective_after < j.objective_before) return [`better: ${J}`, "judged-better"];
    return [`not worse: ${J}`, "judged-kept"];
  }

  // Changed settings of a decision, "alpha 0.5 → 0.25"; overload_cut,
  // which the tuner's JSON omits when off, as "overload_cut off → on".

  // Each leaf in the table of changes' words (leafText): "alpha 1 → 0.5",
  // "V_growth 1.25 GB/s → 125 MB/s". A row that changed nothing (a hold,
  // whatever settings it carries; a decision whose settings are the same)
  // shows "–".
  function change(a) {
    if (a.outcome === "hold") return "–";
    const b = a.before || {}, f = a.after || {};
    const keys = new Set([...Object.keys(b), ...Object.keys(f)]);
    const parts = [];
    for (const k of keys) {
      const leaf = settingLeaf[k] || k;
      const [name, fmt] = leafText[leaf] || [k, String];
      const v = (o) => (leaf === "overload_cut" ? !!o[k] : o[k]); // left out when off
      if (leaf === "overload_cut" && !(a.before && a.after)) continue;
      if (JSON.stringify(v(b)) === JSON.stringify(v(f))) continue;
      const show = (x) => (x === undefined || x === null ? "–" : fmt(x));
      parts.push(`${name} ${show(v(b))} → ${show(v(f))}`);
    }
    return parts.join(", ") || "–";
  }

  // The direction of a decision; a hold's is the rule's that held it
  // back, so "hold (would tighten)".
  function direction(a) {
    const d = a.direction || "";
    if (a.outcome !== "hold") return d || "–";
    return d && d !== "hold" ? `hold (would ${d})` : "hold";
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
            const x = Math.round(u.valToPos(xOf(a.t), "x", true));
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

  // The legend shows every series' newest value while the cursor is off the
  // chart (uPlot shows none then): the last non-null value of each series.
  function showLatest(u) {
    if (u.cursor.idx !== null && u.cursor.idx !== undefined) return;
    const rows = u.root.querySelectorAll(".u-legend .u-series");
    u.series.forEach((s, i) => {
      if (i === 0 || !rows[i]) return;
      const col = u.data[i] || [];
      let v = null;
      for (let j = col.length - 1; j >= 0; j--) if (col[j] !== null && col[j] !== undefined) { v = col[j]; break; }
      const cell = rows[i].querySelector(".u-value");
      if (cell) cell.textContent = v === null ? "none" : (s.value ? s.value(u, v, i, null) : String(v));
    });
    const x = rows[0] && rows[0].querySelector(".u-value");
    if (x) x.textContent = "latest";
  }

  function makeChart(name, series, extraScales, extraAxes) {
    const el = $("#chart-" + name);
    const opts = {
      width: width(el),
      height: 220,
      cursor: { sync: { key: "lhcnp" } },
      legend: { live: true },
      scales: Object.assign({
        x: { time: state.xMode !== "sim", range: () => [xOf(state.from), xOf(state.to)] },
      }, extraScales || {}),
      axes: [{ space: 100, size: 48, values: xLabels },
        { size: 70, values: (u, vals) => vals.map((v) => si(v)) }].concat(extraAxes || []),
      series: [{ label: state.xMode === "sim" ? "simulated" : "time",
        value: (u, v) => (v === null || v === undefined ? "–" : (state.xMode === "sim" ? fmtDuration(v) : fmtTime(v))) }].concat(series),
      plugins: [decisionMarkers()],
      hooks: { setLegend: [showLatest], setData: [showLatest] },
    };
    const data = [[]].concat(series.map(() => []));
    const chart = new uPlot(opts, data, el);
    state.charts[name] = chart;
    return chart;
  }

  // A measured series: a line that spans the samples the collector missed
  // but stops at a restart (the gaps carry nulls).
  function line(label, stroke, extra) {
    return Object.assign({ label, stroke, width: 1.5, spanGaps: false, value: (u, v) => si(v) }, extra || {});
  }

  // A configuration value (K_min, K_max, alpha): it holds until it changes,
  // so steps, never a slope, and a gap across a restart.
  function step(label, stroke, extra) {
    return line(label, stroke, Object.assign({ paths: uPlot.paths.stepped({ align: 1 }) }, extra || {}));
  }

  function createCharts() {
    makeChart("depth", [
      line("depth", "#1f77b4", { fill: "rgba(31,119,180,0.1)" }),
      step("K_min", "#2ca02c", { dash: [6, 4] }),
      step("K_max", "#d62728", { dash: [6, 4] }),
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
      step("alpha", "#17becf"),
      { label: "tuner's decision", stroke: "#8c3cc8", width: 0, paths: () => null,
        points: { show: true, size: 10, fill: "#8c3cc8" }, value: (u, v) => (v === null ? "–" : v) },
      { label: "operator's change", stroke: "#e67e00", width: 0, paths: () => null,
        points: { show: true, size: 12, fill: "#e67e00" }, value: (u, v) => (v === null ? "–" : v) },
    ]);
  }

  // Every chart as wide as its figure, whenever the figure's width changes.
  const resizer = new ResizeObserver((entries) => {
    for (const e of entries) {
      const name = e.target.id.replace("chart-", "");
      const c = state.charts[name];
      const w = width(e.target);
      if (c && Math.abs(c.width - w) > 1) c.setSize({ width: w, height: 220 });
    }
  });

  function recreateCharts() {
    for (const c of Object.values(state.charts)) c.destroy();
    state.charts = {};
    createCharts();
    if (state.queue) drawQueue(state.queue);
  }

  // align merges column sets with different time axes into uPlot's layout:
  // one sorted x array, every series undefined where it has no sample (uPlot
  // spans those; a null is a gap).
  function align(sets) {
    const ts = new Set();
    for (const s of sets) for (const t of s.t) ts.add(t);
    const x = [...ts].sort((a, b) => a - b);
    const index = new Map(x.map((t, i) => [t, i]));
    const out = [x];
    for (const s of sets) {
      for (const col of s.cols) {
        const arr = new Array(x.length).fill(undefined);
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

  // restarts finds where the switch published nothing for much longer than
  // its usual interval (a restart, a stopped lab): the queue depth is
  // sampled all the time, so a hole in it is a hole in everything.
  function restarts(t) {
    if (t.length < 3) return [];
    const d = [];
    for (let i = 1; i < t.length; i++) d.push(t[i] - t[i - 1]);
    const median = [...d].sort((a, b) => a - b)[Math.floor(d.length / 2)];
    const limit = Math.max(5 * median, 3 * state.refreshMs / 1000, 3);
    const gaps = [];
    for (let i = 1; i < t.length; i++) if (t[i] - t[i - 1] > limit) gaps.push([t[i - 1], t[i]]);
    return gaps;
  }

  // withGaps breaks uPlot data [x, ...series] at the gaps: a step series
  // (indices in steps) holds its value to the gap's start, then every series
  // has a null there, which uPlot draws as a gap (undefined, a series with
  // no sample at that x, it spans).
  function withGaps(data, steps) {
    if (state.gaps.length === 0) return data;
    const x = data[0];
    const out = data.map(() => []);
    const last = data.map(() => undefined);
    let g = 0;
    const cut = (a) => {
      out[0].push(a + 1e-3, a + 2e-3);
      for (let s = 1; s < data.length; s++) out[s].push(steps.includes(s) ? last[s] : undefined, null);
    };
    for (let i = 0; i < x.length; i++) {
      for (; g < state.gaps.length && x[i] > state.gaps[g][0]; g++) cut(state.gaps[g][0]);
      out[0].push(x[i]);
      for (let s = 1; s < data.length; s++) {
        out[s].push(data[s][i]);
        if (data[s][i] !== null && data[s][i] !== undefined) last[s] = data[s][i];
      }
    }
    return out;
  }

  function setData(name, data, steps) {
    const d = withGaps(data, steps || []);
    d[0] = d[0].map(xOf);
    state.charts[name].setData(d);
  }

  // Long-haul CNP actions with none sent in the window are not drawn (they
  // would lie at zero under the others): their legend entries are hidden
  // and the caption names them.
  function showActions(n) {
    const u = state.charts.notifications;
    const none = [];
    const rows = u.root.querySelectorAll(".u-legend .u-series");
    ["NOTIFY", "RATE_REDUCE", "PAUSE", "RESUME"].forEach((a, i) => {
      const any = (n.values[a] || []).some((v) => v !== null && v > 0);
      if (!any) none.push(a);
      if (u.series[i + 1].show !== any) u.setSeries(i + 1, { show: any });
      if (rows[i + 1]) rows[i + 1].style.display = any ? "" : "none";
    });
    $("#actions-none").textContent = none.length ? ` · none sent in this window: ${none.join(", ")}` : "";
  }

  // A tuned leaf's value as both tables show it: alpha as is, V_growth in
  // bytes per second (B/s, as the tuner's reasons and docs/tuner.md give
  // it; bits per second are b/s on this page), the explicit kmax in bytes,
  // each with three significant digits as the reasons have them
  // (ReadableReason), overload-cut on or off.
  const leafText = {
    alpha: ["alpha", (v) => String(v)],
    v_growth: ["V_growth", (v) => si3(v, "B/s")],
    kmax: ["kmax", (v) => si3(v, "B")],
    kmax_mode: ["K_max mode", (v) => String(v)],
    overload_cut: ["overload-cut", (v) => (v ? "on" : "off")],
  };
  // The tuner's JSON keys of its settings (tuner_actions' before and
  // after), by leaf.
  const settingLeaf = {
    alpha: "alpha", v_growth_bytes_per_second: "v_growth", kmax_bytes: "kmax",
    kmax_mode: "kmax_mode", overload_cut: "overload_cut",
  };

  // Who made a change: the tuner (with its rule), the switch rolling a
  // tuner's change back, an operator, or an operator's hold or release of
  // the queue (lhcnp tuner hold / release).
  function changeBy(c) {
    const rule = c.rule ? ` (rule ${c.rule})` : "";
    let by = {
      tuner: "tuner" + rule,
      rollback: `switch (tuner's change${rule} rolled back)`,
      operator: "operator",
      hold: "operator's hold of the queue",
      release: "operator's release of the queue",
    }[c.by] || c.by;
    if (c.hold_until) by += `; tuning held until ${fmtTime(c.hold_until)}`;
    return by;
  }

  // heldText says until when the tuner leaves the queue alone, and why:
  // an operator's change the tuner saw, or an operator's hold.
  function heldText(h) {
    const by = h.rule === "operator-hold" ? "an operator's hold of the queue (lhcnp tuner hold)" : "an operator's change the tuner saw";
    return `Tuning of this queue is held until ${fmtTime(h.until)}: ${by}, recorded ${fmtTime(h.t)}.`;
  }

  function drawChanges(q) {
    // Whether the tuner holds the queue, whatever the window: a change is
    // held for operator_hold (15 min), longer than the default window.
    const hs = $("#hold-status");
    hs.textContent = q.held ? heldText(q.held) : "";
    hs.style.display = q.held ? "" : "none";
    const tb = $("#changes tbody");
    tb.innerHTML = "";
    for (const c of [...q.changes].reverse()) {
      const tr = document.createElement("tr");
      // An operator's change, hold or release is marked as an operator's
      // everywhere on the page.
      const operator = c.by === "operator" || c.by === "hold" || c.by === "release";
      tr.className = "change by-" + c.by + (operator && c.by !== "operator" ? " by-operator" : "");
      let what = "tuning of the queue";
      if (c.setting) {
        const [name, fmt] = leafText[c.setting] || [c.setting, String];
        what = `${name} ${c.before === null ? "–" : fmt(c.before)} → ${c.after === null ? "–" : fmt(c.after)}`;
      }
      for (const [v, cls] of [[fmtTime(c.t), "text"], [changeBy(c), "text"], [what, "text"]]) {
        const td = document.createElement("td");
        td.textContent = v;
        td.className = cls;
        tr.appendChild(td);
      }
      tb.appendChild(tr);
    }
    $("#changes-empty").style.display = q.changes.length ? "none" : "";
    $("#changes").style.display = q.changes.length ? "" : "none";
  }

  // heldToEnd is a configuration value's columns (its value at the
  // window's start, then every change) with its last value held to the
  // window's end: the switch reports a change, not every sample, so a step
  // line would otherwise stop at the last change (a lone point at the
  // window's start when nothing changed in it).
  function heldToEnd(t, v, end) {
    const last = v.length > 0 ? v[v.length - 1] : null;
    if (t.length === 0 || t[t.length - 1] >= end || last === null || last === undefined) return { t, cols: [v] };
    return { t: t.concat([end]), cols: [v.concat([last])] };
  }

  function drawQueue(q) {
    state.from = q.from;
    state.to = Math.max(q.to, ...q.tuner.map((a) => a.t));
    const c = q.congestion;
    state.gaps = restarts(c.t);
    setData("depth", [c.t, c.values.depth, c.values.kmin, c.values.kmax], [2, 3]);
    setData("growth", [c.t, c.values.growth, c.values.emr]);
    setData("rates", align([
      { t: q.rates.t, cols: [q.rates.values.queue_bps, q.rates.values.port_bps] },
      { t: q.flows.t, cols: [q.flows.values.arrival_bps] },
    ]), [2]);
    const n = q.notifications;
    setData("notifications", [n.t, n.values.NOTIFY, n.values.RATE_REDUCE, n.values.PAUSE, n.values.RESUME]);
    showActions(n);
    // Operator marks: the changes no decision of the tuner explains (of
    // alpha at its new value, of another leaf on the alpha line), and the
    // operators' holds and releases the tuner recorded (outcome operator;
    // its row of a change is that change's mark already).
    const opChanges = (q.changes || []).filter((ch) => ch.by === "operator");
    const ops = opChanges.map((ch) => ({ t: ch.t, y: ch.setting === "alpha" ? ch.after : decisionY({ t: ch.t }, q.alpha) }));
    const seen = new Set(opChanges.map((ch) => ch.tuner_id).filter((id) => id));
    for (const a of q.tuner) {
      if (a.outcome === "operator" && !seen.has(a.id)) ops.push({ t: a.t, y: decisionY(a, q.alpha) });
    }
    ops.sort((a, b) => a.t - b.t);
    const decisions = q.tuner.filter((a) => a.outcome !== "operator");
    setData("tuner", align([
      heldToEnd(q.alpha.t, q.alpha.values.alpha, q.to),
      { t: decisions.map((a) => a.t), cols: [decisions.map((a) => decisionY(a, q.alpha))] },
      { t: ops.map((o) => o.t), cols: [ops.map((o) => o.y)] },
    ]), [1]);
    drawChanges(q);
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
        [si(q.buffer_bytes, "B")], [si(q.kmin_bytes, "B")], [si(q.kmax_bytes, "B")], [si(q.growth_rate_bytes_per_second, "B/s")],
        [q.congestion_level ?? "–"], [q.alpha ?? "–"],
        [q.overload_cut === null || q.overload_cut === undefined ? "–" : (q.overload_cut ? "on" : "off"), q.overload_cut ? "cut-on" : ""],
        [q.notifications ?? "–"],
        [q.held ? `held until ${fmtTime(q.held.until)}` : "–", q.held ? "text held" : "text"],
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
      const [judged, judgedClass] = judgement(a);
      // Rule pinned's changes (the node's overload-cut) stand out.
      tr.className = a.rule === "pinned" ? "decision rule-pinned" : "decision";
      const cells = [
        [fmtTime(a.t), "text"], [a.target, "text"],
        [a.interface === null ? "–" : `${a.interface} q${a.queue}`, "text"],
        [a.outcome + (a.dry_run ? " (dry run)" : ""), "text outcome-" + a.outcome],
        [direction(a), "text direction"],
        [change(a), "text"], [judged, "text judged " + judgedClass],
        [(a.reason_text || a.reason || "") + (a.error ? ` (${a.error})` : ""), "text reason"],
      ];
      for (const [v, cls] of cells) {
        const td = document.createElement("td");
        td.textContent = v;
        td.className = cls;
        tr.appendChild(td);
      }
      // The tuner's own words, on hover.
      if (a.reason) tr.lastChild.title = a.reason;
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
      st.textContent = state.selected ? `updated ${hms(new Date())}` : "waiting for telemetry…";
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
      if (cfg.speed) state.speed = cfg.speed;
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
    const xs = $("#x-select");
    xs.addEventListener("change", () => { state.xMode = xs.value; recreateCharts(); });
    createCharts();
    for (const el of document.querySelectorAll(".chart")) resizer.observe(el);
    loop();
  }

  // For the browser test: the gap logic on data of its own.
  state.restarts = (t) => restarts(t);
  state.withGaps = (gaps, data, steps) => { const keep = state.gaps; state.gaps = gaps; const out = withGaps(data, steps); state.gaps = keep; return out; };

  start();
})();
