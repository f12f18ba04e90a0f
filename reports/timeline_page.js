// The timeline page's drawing: reads the JSON in #data (reports/timeline_model.py), draws one SVG.
// Lanes top to bottom, time left to right; the x scale blends real time with event order so that
// bursts (32 calls within a millisecond) stay readable. No libraries; inlined by reports/timeline.py.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const ROW = 15, GAP = 10, AXIS = 26, PAD = 8;
  const chart = document.getElementById("chart"), labels = document.getElementById("lanes");
  const scroll = document.getElementById("scroll"), tip = document.getElementById("tip");
  const detail = document.getElementById("detail");
  // an imported incident's page opens on the verdict production also broke (D.preselected)
  const state = { zoom: 1, blend: 0.35, verdict: D.verdicts.length ? Math.max(D.preselected || 0, 0) : -1, guid: null, unfold: false };
  const knots = Array.from(new Set([0, D.end].concat(
    D.boxes.flatMap(b => [b.t0, b.t1]), D.marks.map(m => m.t), D.windows.flatMap(w => [w.t0, w.t1]))))
    .sort((a, b) => a - b);
  const esc = s => String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const fit = (label, px) => {  // the label, or its words that fit in px (10px text), or nothing
    const room = Math.floor((px - 5) / 5.5);
    if (label.length <= room) return label;
    const words = label.split(" ");
    while (words.length > 1 && words.join(" ").length + 1 > room) words.pop();
    return words.length && words[0].length + 1 <= room && room >= 4 ? words.join(" ") + "…" : "";
  };
  const secs = t => (t >= 10 ? t.toFixed(1) : t >= 1 ? t.toFixed(2) : t.toFixed(3)) + " s";

  function width() { return Math.max(scroll.clientWidth - 2 * PAD, 600) * state.zoom; }
  function x(t) {  // blend of real time and of the rank among all moments drawn
    const W = width(), lin = D.end > 0 ? Math.min(Math.max(t / D.end, 0), 1) : 0;
    let lo = 0, hi = knots.length - 1;
    while (hi - lo > 1) { const m = (lo + hi) >> 1; if (knots[m] <= t) lo = m; else hi = m; }
    const span = knots[hi] - knots[lo];
    const frac = span > 0 ? Math.min(Math.max((t - knots[lo]) / span, 0), 1) : 0;
    const rank = knots.length > 1 ? (lo + frac) / (knots.length - 1) : 0;
    return PAD + W * (state.blend * lin + (1 - state.blend) * rank);
  }
  function focus() {  // the event indices and account calls to highlight, or null for none
    if (state.guid !== null) {
      const ev = new Set(), calls = new Set();
      D.boxes.filter(b => b.guid === state.guid).forEach(b => { b.events.forEach(i => ev.add(i)); if (b.call !== null) calls.add(b.call); });
      return { ev, calls, guid: state.guid };
    }
    if (state.verdict < 0) return null;
    const v = D.verdicts[state.verdict];
    return { ev: new Set(v.events), calls: new Set(v.calls), guid: v.guid };
  }
  function folded() {  // the fault windows that do not touch the GUID in focus: folded unless asked for
    const g = state.guid !== null ? state.guid : (state.verdict >= 0 ? D.verdicts[state.verdict].guid : null);
    if (g === null || state.unfold) return { g, out: new Set() };
    const mine = D.boxes.filter(b => b.guid === g);
    const t0 = Math.min(...mine.map(b => b.t0)), t1 = Math.max(...mine.map(b => b.t1));
    const out = new Set();
    D.windows.forEach((w, i) => { if (w.guids.length ? !w.guids.includes(g) : (w.t1 < t0 || w.t0 > t1)) out.add(i); });
    return { g, out };
  }
  const isHit = (f, item) => f && item.outcome !== "up" && (item.events.some(i => f.ev.has(i)) ||
    (item.call != null && f.calls.has(item.call)) || (item.lane === "ledger" && f.guid !== null && item.guid === f.guid));

  function layout() {
    let y = AXIS;
    return D.lanes.map(([name, rows]) => { const lane = { name, rows, y, h: rows * ROW + GAP }; y += lane.h; return lane; });
  }
  function ticks(out, height) {
    const W = width(), want = Math.max(Math.floor(W / 90), 2);
    const raw = (D.end || 1) / (want * 4), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
    let last = -1e9;
    for (let t = 0; t <= D.end + 1e-9; t += step) {
      const px = x(t);
      if (px - last < 70) continue;
      last = px;
      out.push(`<line class="tick" x1="${px}" y1="${AXIS - 6}" x2="${px}" y2="${height}"/>` +
        `<text class="ticklabel" x="${px + 3}" y="${AXIS - 10}">${secs(t)}</text>`);
    }
  }
  function draw() {
    const lanes = layout(), byName = Object.fromEntries(lanes.map(l => [l.name, l]));
    const height = lanes.length ? lanes[lanes.length - 1].y + lanes[lanes.length - 1].h : AXIS;
    const W = width() + 2 * PAD, f = focus(), out = [];
    lanes.forEach((l, i) => out.push(`<rect class="lane${i % 2 ? " odd" : ""}" data-lane="${esc(l.name)}" x="0" y="${l.y}" width="${W}" height="${l.h}"/>`));
    ticks(out, height);
    const fold = folded();
    D.windows.forEach((w, i) => {
      if (fold.out.has(i)) return;
      const x0 = x(w.t0), x1 = Math.max(x(w.t1), x0 + 2), fl = byName.faults;
      out.push(`<rect class="window ${w.side}" x="${x0}" y="${AXIS}" width="${x1 - x0}" height="${height - AXIS}"/>`);
      if (fl) out.push(`<rect class="fault ${w.side}" data-w="${i}" x="${x0}" y="${fl.y + w.row * ROW + 2}" width="${x1 - x0}" height="${ROW - 3}"/>` +
        (fit(w.label, x1 - x0) ? `<text class="flabel" x="${x0 + 3}" y="${fl.y + w.row * ROW + 12}">${esc(fit(w.label, x1 - x0))}</text>` : ""));
    });
    D.boxes.forEach((b, i) => {
      const l = byName[b.lane]; if (!l) return;
      const x0 = x(b.t0), x1 = Math.max(x(b.t1), x0 + 3), y = l.y + b.row * ROW + 2;
      const hit = isHit(f, b) ? " hit" : "";
      if (b.outcome === "up") { out.push(`<rect class="box up${hit}" data-b="${i}" x="${x0}" y="${y + 4}" width="${x1 - x0}" height="4"/>`); return; }
      out.push(`<rect class="box ${b.outcome}${hit}" data-b="${i}" x="${x0}" y="${y}" width="${x1 - x0}" height="${ROW - 3}" rx="2"/>`);
      const fits = fit(b.label, x1 - x0);
      if (fits) out.push(`<text class="label${hit}" x="${x0 + 3}" y="${y + 9.5}">${esc(fits)}</text>`);
    });
    D.marks.forEach((m, i) => {
      const l = byName[m.lane]; if (!l) return;
      const px = x(m.t), cy = l.y + Math.min(l.rows, 2) * ROW / 2, hit = isHit(f, m) ? " hit" : "";
      const shape = m.kind === "kill" ? `M${px - 5},${cy - 5}L${px + 5},${cy + 5}M${px + 5},${cy - 5}L${px - 5},${cy + 5}`
        : m.kind === "start" ? `M${px - 5},${cy + 5}L${px},${cy - 6}L${px + 5},${cy + 5}Z`
          : `M${px},${cy - 5}L${px + 5},${cy}L${px},${cy + 5}L${px - 5},${cy}Z`;
      out.push(`<line class="markline ${m.kind}" x1="${px}" y1="${AXIS}" x2="${px}" y2="${height}"/>` +
        `<path class="mark ${m.kind}${hit}" data-m="${i}" d="${shape}"/>`);
    });
    chart.setAttribute("width", W); chart.setAttribute("height", height);
    chart.classList.toggle("focus", !!f);
    chart.innerHTML = out.join("");
    labels.setAttribute("height", height);
    labels.innerHTML = lanes.map((l, i) => `<rect class="lane${i % 2 ? " odd" : ""}" x="0" y="${l.y}" width="100%" height="${l.h}"/>` +
      `<text class="lanename" x="8" y="${l.y + 13}">${esc(l.name)}</text>` +
      (l.rows > 1 && l.name !== "faults" && l.name !== "steps" ? `<text class="lanerows" x="8" y="${l.y + 26}">up to ${l.rows} at once</text>` : "")).join("");
    document.querySelectorAll("#verdicts .verdict").forEach(el => el.classList.toggle("selected", +el.dataset.v === state.verdict && state.guid === null));
    const sel = document.getElementById("selected"), v = D.verdicts[state.verdict];
    if (sel) sel.innerHTML = v && state.guid === null ? `<b class="rule">${esc(v.rule)}</b> — ${esc(v.text)}<br>` +
      `${v.guid ? "GUID <code>" + esc(v.guid) + "</code>" + (v.label ? " (" + esc(v.label) + ")" : "") : "the run"}` +
      `${v.production ? ", production GUID <code>" + esc(v.production) + "</code>" : ""}: ${esc(v.summary)}` +
      (v.count > 1 ? ` <i>(and ${v.count - 1} more verdict${v.count > 2 ? "s" : ""} of this rule for it, highlighted together)</i>` : "") +
      `<br><span class="clause">contract ${esc(v.clause)}</span>` : "";
    const note = document.getElementById("guidnote");
    note.textContent = state.guid === null ? "" : `showing GUID ${state.guid}`;
    if (fold.out.size) {
      note.append(` ${fold.out.size} fault${fold.out.size > 1 ? "s" : ""} folded (not touching GUID ${fold.g}) `);
      const b = document.createElement("button"); b.id = "unfold"; b.textContent = "unfold";
      b.onclick = () => { state.unfold = true; draw(); }; note.append(b);
    }
  }

  function itemOf(target) {
    const d = target.dataset || {};
    if (d.b !== undefined) { const b = D.boxes[+d.b]; return { title: b.label, text: b.text, t0: b.t0, t1: b.t1, events: b.events, call: b.call, guid: b.guid }; }
    if (d.m !== undefined) { const m = D.marks[+d.m]; return { title: m.kind, text: m.label, t0: m.t, events: m.events, call: null, guid: null }; }
    if (d.w !== undefined) { const w = D.windows[+d.w]; return { title: "fault", text: w.label, t0: w.t0, t1: w.t1, events: w.events, call: null, guid: null }; }
    return null;
  }
  chart.addEventListener("mousemove", e => {
    const it = itemOf(e.target);
    if (!it) { tip.style.display = "none"; return; }
    const when = it.t1 === undefined ? `at +${secs(it.t0)}` : `+${secs(it.t0)} → +${secs(it.t1)} (${((it.t1 - it.t0) * 1000).toFixed(1)} ms)`;
    tip.innerHTML = `<b>${esc(it.title)}</b><br>${esc(it.text).replace(/\n/g, "<br>")}<br><i>${when}</i>`;
    tip.style.display = "block";
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = (e.clientY + 14) + "px";
  });
  chart.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  chart.addEventListener("click", e => {
    const it = itemOf(e.target);
    if (!it) return;
    const parts = it.events.map(i => D.events[i]).filter(Boolean).map(ev =>
      `<div class="ev"><b>#${ev.index}</b> +${secs(ev.t)} <code>${esc(ev.process)}</code> ${esc(ev.type)} <code>${esc(ev.f)}</code>` +
      `<pre>${esc(JSON.stringify(ev.value, null, 1))}</pre></div>`);
    if (it.call != null && D.calls[it.call]) parts.push(`<div class="ev"><b>account call ${it.call}</b> (the account system's own log)` +
      `<pre>${esc(JSON.stringify(D.calls[it.call], null, 1))}</pre></div>`);
    detail.innerHTML = `<button id="close" title="close">×</button><h3>${esc(it.title)}</h3><p>${esc(it.text).replace(/\n/g, "<br>")}</p>` +
      (it.guid ? `<button id="onlyguid">highlight GUID ${esc(it.guid)}</button>` : "") + parts.join("");
    detail.style.display = "block";
    document.getElementById("close").onclick = () => { detail.style.display = "none"; };
    const only = document.getElementById("onlyguid");
    if (only) only.onclick = () => { state.guid = it.guid; draw(); };
  });
  document.querySelectorAll("#verdicts .verdict").forEach(el => el.addEventListener("click", () => {
    const i = +el.dataset.v;
    state.guid = null; state.verdict = state.verdict === i ? -1 : i; draw();
  }));
  document.getElementById("zoomin").onclick = () => { state.zoom *= 1.6; draw(); };
  document.getElementById("zoomout").onclick = () => { state.zoom = Math.max(state.zoom / 1.6, 1); draw(); };
  document.getElementById("all").onclick = () => { state.guid = null; state.verdict = -1; state.unfold = false; draw(); };
  document.getElementById("scale").onchange = e => { state.blend = +e.target.value; draw(); };
  window.addEventListener("resize", draw);
  draw();
})();
