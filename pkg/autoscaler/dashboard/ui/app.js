// Ebb dashboard: one EventSource on events?revision=NS/NAME delivers, every
// second, every revision's status plus the selected revision's new chart
// points and last decisions (autoscaler.Update). This file keeps the last
// 10 minutes of points, draws the chart as SVG and the lists as DOM. No
// dependencies, no build step.
'use strict';

(function () {
  const WINDOW = 600; // seconds of chart kept and drawn
  const MIN_SPAN = 20; // the x axis spans at least this many seconds
  const SVGNS = 'http://www.w3.org/2000/svg';

  const state = {
    selected: null, // "namespace/name"
    revisions: [], // autoscaler.Status, sorted
    points: [], // autoscaler.Point, oldest first
    decisions: [], // autoscaler.DecisionView, newest first
    es: null,
    hover: null, // x in px of the mouse over the chart, or null
  };
  const $ = (id) => document.getElementById(id);

  // ---- small helpers --------------------------------------------------

  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function s(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const pad = (n) => String(n).padStart(2, '0');
  function clock(t) {
    const d = new Date(t * 1000);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  const unix = (iso) => Math.floor(Date.parse(iso) / 1000);

  function num(v) {
    if (v === undefined || v === null || Number.isNaN(v)) return '–';
    const a = Math.abs(v);
    const d = a >= 100 ? 0 : a >= 10 ? 1 : 2;
    return String(Number(v.toFixed(d)));
  }

  function metricLabel(metric) {
    switch (metric) {
      case 'concurrency': return 'requests in flight';
      case 'rps': return 'requests per second';
      case '': case undefined: return 'load';
      default: return metric;
    }
  }

  const keyOf = (st) => st.namespace + '/' + st.name;
  const selectedStatus = () => state.revisions.find((r) => keyOf(r) === state.selected);

  // ---- the stream -----------------------------------------------------

  function setConn(st, text) {
    const c = $('conn');
    c.dataset.state = st;
    c.textContent = text;
  }

  function connect() {
    if (state.es) state.es.close();
    state.points = [];
    state.decisions = [];
    const url = 'events' + (state.selected ? '?revision=' + encodeURIComponent(state.selected) : '');
    const es = new EventSource(url);
    // Every (re)connection starts with the whole chart.
    es.onopen = () => { state.points = []; setConn('live', 'live'); };
    es.onerror = () => setConn('lost', 'reconnecting…');
    es.addEventListener('update', (ev) => onUpdate(es, JSON.parse(ev.data)));
    state.es = es;
  }

  function select(key, replace) {
    if (key === state.selected) return;
    state.selected = key;
    const hash = '#' + encodeURI(key);
    if (replace) history.replaceState(null, '', hash);
    else history.pushState(null, '', hash);
    render();
    connect();
  }

  function onUpdate(es, u) {
    if (es !== state.es) return; // a stream we already left
    state.revisions = (u.revisions || []).slice().sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    if (!state.selected && state.revisions.length > 0) {
      select(keyOf(state.revisions[0]), true);
      return;
    }
    if (u.selected === state.selected) {
      mergePoints(u.points || []);
      state.decisions = u.decisions || [];
    }
    render();
  }

  function mergePoints(pts) {
    const last = state.points.length ? state.points[state.points.length - 1].t : -Infinity;
    for (const p of pts) if (p.t > last) state.points.push(p);
    if (state.points.length === 0) return;
    const cut = state.points[state.points.length - 1].t - WINDOW;
    let i = 0;
    while (i < state.points.length && state.points[i].t < cut) i++;
    if (i > 0) state.points.splice(0, i);
  }

  // ---- rendering ------------------------------------------------------

  function render() {
    renderRevisions();
    renderSummary();
    drawChart();
    renderDecisions();
  }

  // badges: the state, panic mode and the activator; long spells them out.
  function badges(st, long) {
    const out = [h('span', { class: 'badge state-' + st.state, text: st.state || 'unknown' })];
    if (st.panic) out.push(h('span', { class: 'badge panic', text: long ? 'panic mode' : 'panic' }));
    else if (long) out.push(h('span', { class: 'badge stable', text: 'stable mode' }));
    if (st.activatorInPath) out.push(h('span', { class: 'badge activator', text: long ? 'activator in path' : 'activator' }));
    else if (long) out.push(h('span', { class: 'badge direct', text: 'direct to pods' }));
    return out;
  }

  function renderRevisions() {
    const list = $('revisions');
    $('no-revisions').hidden = state.revisions.length > 0;
    $('rev-count').textContent = state.revisions.length ? '(' + state.revisions.length + ')' : '';
    const existing = new Map([...list.children].map((li) => [li.dataset.key, li]));
    state.revisions.forEach((st, i) => {
      const key = keyOf(st);
      let li = existing.get(key);
      existing.delete(key);
      if (!li) {
        const btn = h('button', { type: 'button', class: 'rev' });
        btn.addEventListener('click', () => select(key, false));
        li = h('li', { 'data-key': key }, btn);
      }
      const btn = li.firstChild;
      btn.setAttribute('aria-current', key === state.selected ? 'true' : 'false');
      btn.setAttribute('aria-label', `${key}: ${st.state}, ${st.ready} ready of ${st.desired} desired` +
        (st.panic ? ', panic mode' : '') + (st.activatorInPath ? ', activator in path' : ''));
      btn.replaceChildren(
        h('span', { class: 'name', text: st.name }),
        h('span', { class: 'counts' }, h('b', { text: st.ready + '/' + st.desired }), h('span', { text: 'ready/desired' })),
        h('span', { class: 'ns', text: st.namespace }),
        h('span', { class: 'badges' }, ...badges(st)),
      );
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
    });
    for (const li of existing.values()) li.remove();
  }

  function card(label, value, extra, cls) {
    return h('div', { class: 'card' + (cls ? ' ' + cls : '') },
      h('dt', { text: label }), h('dd', {}, String(value), extra ? h('small', { text: ' ' + extra }) : null));
  }

  function renderSummary() {
    const st = selectedStatus();
    const cards = $('cards');
    if (!st) {
      $('rev-title').textContent = state.selected ? state.selected : 'No revision selected';
      $('rev-meta').textContent = state.selected ? 'not autoscaled here (any more)' : '';
      cards.replaceChildren();
      $('rev-badges').replaceChildren();
      return;
    }
    $('rev-title').textContent = keyOf(st);
    const cls = (st.class || '').split('.')[0].toUpperCase();
    $('rev-meta').textContent = `${cls} on ${st.metric}, target ${num(st.target)} per pod` +
      (st.time && unix(st.time) > 0 ? ` · last decision ${clock(unix(st.repeated ? st.until : st.time))}` : '');
    $('rev-badges').replaceChildren(...badges(st, true));
    cards.replaceChildren(
      card('Desired', st.desired, '', 'desired'),
      card('Ready', st.ready),
      card('Recommended', st.recommended < 0 ? '–' : st.recommended),
      card('Stable avg', st.hasData ? num(st.stable) : '–'),
      card('Panic avg', st.hasData ? num(st.panicAverage) : '–', '', st.panic ? 'hot' : ''),
      card('Target/pod', num(st.target)),
      card('Excess burst', st.ebc),
    );
  }

  // niceStep returns a step of 1, 2 or 5 times a power of ten near raw.
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  // runs returns the [from, to] periods during which pred holds: a point
  // holds until the next one (the last one until end).
  function runs(pts, pred, end) {
    const out = [];
    pts.forEach((p, i) => {
      if (!pred(p)) return;
      const to = i + 1 < pts.length ? pts[i + 1].t : end;
      const last = out[out.length - 1];
      if (last && last[1] === p.t) last[1] = to;
      else out.push([p.t, to]);
    });
    return out;
  }

  // path builds an SVG path for one series: a line through the points, or
  // a step (held until the next point). value returns null for a gap.
  function path(pts, value, x, y, step, end) {
    let d = '';
    let open = false;
    pts.forEach((p, i) => {
      const v = value(p);
      if (v === null) { open = false; return; }
      const px = x(p.t).toFixed(1), py = y(v).toFixed(1);
      d += (open ? (step ? 'V' : 'L') : 'M') + (open && step ? py : px + ' ' + py);
      if (step) d += 'H' + x(i + 1 < pts.length ? pts[i + 1].t : end).toFixed(1);
      open = true;
    });
    return d;
  }

  function drawChart() {
    const svg = $('chart');
    const W = Math.max(320, Math.round(svg.clientWidth || 800));
    const H = Math.max(240, Math.round(svg.clientHeight || 360));
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const desc = $('chart-desc');
    svg.replaceChildren(desc);
    const m = { l: 64, r: 50, t: 18, b: 44 };
    const X0 = m.l, X1 = W - m.r, Y0 = m.t, Y1 = H - m.b;
    const pts = state.points;
    const st = selectedStatus();
    svg.dataset.points = String(pts.length);
    svg.dataset.maxDesired = String(pts.reduce((a, p) => Math.max(a, p.desired), 0));
    svg.dataset.lastDesired = pts.length ? String(pts[pts.length - 1].desired) : '0';

    svg.append(s('rect', { class: 'frame', x: X0, y: Y0, width: X1 - X0, height: Y1 - Y0 }));
    if (pts.length === 0) {
      svg.dataset.panicBands = svg.dataset.activatorBands = '0';
      svg.append(s('text', { class: 'nodata', x: (X0 + X1) / 2, y: (Y0 + Y1) / 2, 'text-anchor': 'middle' },
        state.selected ? 'Waiting for decisions… (a revision gets a chart once it runs pods or someone looks at it)' : 'Select a revision'));
      desc.textContent = 'No data yet.';
      $('tip').hidden = true;
      return;
    }

    // Domains: time, the metric (left), replicas (right).
    // The last decision holds for one tick (the gap between the last two
    // points), so that its value has a visible width.
    const tick = pts.length > 1 ? Math.min(10, pts[pts.length - 1].t - pts[pts.length - 2].t) : 2;
    const tEnd = pts[pts.length - 1].t + tick;
    const tStart = tEnd - Math.min(WINDOW, Math.max(MIN_SPAN, tEnd - pts[0].t));
    const vis = pts.filter((p) => p.t >= tStart);
    const x = (t) => X0 + ((t - tStart) / (tEnd - tStart)) * (X1 - X0);
    // 10% headroom, so that no line runs along the frame.
    const maxL = 1.1 * Math.max(1, ...vis.map((p) => Math.max(p.hasData ? p.stable : 0, p.hasData ? p.panicAverage : 0, p.target)));
    const stepL = niceStep(maxL / 5);
    const n = Math.max(1, Math.ceil(maxL / stepL - 1e-9));
    const topL = stepL * n;
    const maxR = 1.1 * Math.max(1, ...vis.map((p) => Math.max(p.desired, p.ready, p.recommended)));
    const stepR = Math.max(1, Math.ceil(maxR / n));
    const topR = stepR * n;
    const yL = (v) => Y1 - (v / topL) * (Y1 - Y0);
    const yR = (v) => Y1 - (v / topR) * (Y1 - Y0);

    // Bands first, so lines are drawn over them.
    const panics = runs(vis, (p) => p.panic, tEnd);
    const acts = runs(vis, (p) => p.activatorInPath, tEnd);
    svg.dataset.panicBands = String(panics.length);
    svg.dataset.activatorBands = String(acts.length);
    for (const [a, b] of acts) {
      svg.append(s('rect', { class: 'band-activator', x: x(a), y: Y0, width: Math.max(1, x(b) - x(a)), height: Y1 - Y0 }));
      svg.append(s('rect', { class: 'strip-activator', x: x(a), y: Y1 + 4, width: Math.max(2, x(b) - x(a)), height: 6, rx: 2 },
        'activator in path'));
    }
    for (const [a, b] of panics) {
      svg.append(s('rect', { class: 'band-panic', x: x(a), y: Y0, width: Math.max(1, x(b) - x(a)), height: Y1 - Y0 }));
      if (x(b) - x(a) > 40) svg.append(s('text', { class: 'band-label', x: x(a) + 4, y: Y0 + 13 }, 'panic'));
    }
    if (acts.length) svg.append(s('text', { class: 'strip-label', x: X0 - 6, y: Y1 + 11, 'text-anchor': 'end' }, 'activator'));

    // Grid and axes.
    for (let i = 0; i <= n; i++) {
      const yy = yL(i * stepL);
      if (i > 0 && i < n) svg.append(s('line', { class: 'grid', x1: X0, x2: X1, y1: yy, y2: yy }));
      svg.append(s('text', { x: X0 - 8, y: yy + 4, 'text-anchor': 'end' }, num(i * stepL)));
      svg.append(s('text', { x: X1 + 6, y: yy + 4 }, String(i * stepR)));
    }
    const span = tEnd - tStart;
    const stepT = [5, 10, 15, 30, 60, 120, 300].find((c) => (span / c) * 64 <= X1 - X0) || 600;
    for (let t = Math.ceil(tStart / stepT) * stepT; t <= tEnd; t += stepT) {
      svg.append(s('line', { class: 'grid', x1: x(t), x2: x(t), y1: Y0, y2: Y1 }));
      svg.append(s('text', { x: x(t), y: Y1 + 28, 'text-anchor': 'middle' }, clock(t)));
    }
    const metric = metricLabel(st ? st.metric : '');
    svg.append(s('text', { class: 'axis-title', transform: `translate(14 ${(Y0 + Y1) / 2}) rotate(-90)`, 'text-anchor': 'middle' }, metric));
    svg.append(s('text', { class: 'axis-title', transform: `translate(${W - 10} ${(Y0 + Y1) / 2}) rotate(90)`, 'text-anchor': 'middle' }, 'replicas'));

    // Series: the metric on the left axis, replicas on the right.
    const series = [
      ['s-target', (p) => p.target, yL, true],
      ['s-stable', (p) => (p.hasData ? p.stable : null), yL, false],
      ['s-panicavg', (p) => (p.hasData ? p.panicAverage : null), yL, false],
      ['s-recommended', (p) => (p.recommended >= 0 ? p.recommended : null), yR, true],
      ['s-ready', (p) => p.ready, yR, true],
      ['s-desired', (p) => p.desired, yR, true],
    ];
    for (const [cls, value, y, step] of series) {
      const d = path(vis, value, x, y, step, tEnd);
      if (d) svg.append(s('path', { class: 'series ' + cls, d }));
    }

    const last = pts[pts.length - 1];
    desc.textContent = `${vis.length} decisions from ${clock(tStart)} to ${clock(tEnd)}; now desired ${last.desired}, ` +
      `ready ${last.ready}, stable ${num(last.stable)}, panic average ${num(last.panicAverage)}, target ${num(last.target)} per pod; ` +
      `${panics.length} panic period(s), ${acts.length} period(s) with the activator in the path.`;
    drawHover(svg, vis, x, { X0, X1, Y0, Y1 }, metric);
  }

  function drawHover(svg, vis, x, box, metric) {
    const tip = $('tip');
    if (state.hover === null || state.hover < box.X0 || state.hover > box.X1) { tip.hidden = true; return; }
    let best = vis[0];
    for (const p of vis) if (Math.abs(x(p.t) - state.hover) < Math.abs(x(best.t) - state.hover)) best = p;
    const cx = x(best.t);
    svg.append(s('line', { class: 'cursor', x1: cx, x2: cx, y1: box.Y0, y2: box.Y1 }));
    const row = (k, v) => h('div', {}, h('span', { class: 'k', text: k }), String(v));
    tip.replaceChildren(h('b', { text: clock(best.t) }),
      row('stable avg', best.hasData ? num(best.stable) : '–'),
      row('panic avg', best.hasData ? num(best.panicAverage) : '–'),
      row('target/pod', num(best.target)),
      row('desired', best.desired), row('ready', best.ready),
      row('recommended', best.recommended < 0 ? '–' : best.recommended),
      row('mode', (best.panic ? 'panic' : 'stable') + (best.activatorInPath ? ', activator' : '')));
    tip.setAttribute('aria-label', metric + ' at ' + clock(best.t));
    tip.hidden = false;
    const wrap = $('chart-wrap').getBoundingClientRect();
    const sx = wrap.width / (svg.viewBox.baseVal.width || wrap.width);
    const left = cx * sx + 14;
    tip.style.left = (left + tip.offsetWidth > wrap.width ? cx * sx - tip.offsetWidth - 14 : left) + 'px';
    tip.style.top = box.Y0 + 8 + 'px';
  }

  function codeClass(code) {
    if (code.startsWith('Panic')) return 'c-panic';
    if (code.startsWith('Activator')) return 'c-activator';
    return '';
  }

  function renderDecisions() {
    const ol = $('decisions');
    if (state.decisions.length === 0) {
      ol.replaceChildren(h('li', { class: 'empty', text: state.selected ? 'No decision yet.' : '' }));
      return;
    }
    ol.replaceChildren(...state.decisions.map((d, i) => {
      const older = state.decisions[i + 1];
      let arrow = null;
      if (older && older.desired !== d.desired) {
        const up = d.desired > older.desired;
        arrow = h('span', { class: up ? 'up' : 'down', text: (up ? ' ▲ from ' : ' ▼ from ') + older.desired });
      }
      const t = unix(d.time);
      const codes = (d.reasons || []).map((r) => r.code);
      const conds = d.conditions || []; // the HPA class: Kubernetes' HPA conditions
      return h('li', { class: 'decision', 'data-desired': d.desired, 'data-codes': codes.join(' '),
        'data-conditions': conds.map((c) => `${c.type}=${c.status}:${c.reason}`).join(' ') },
        h('div', {}, h('time', { datetime: d.time, text: clock(t) }),
          d.repeated ? h('span', { class: 'rep', text: `×${d.repeated + 1} until ${clock(unix(d.until))}` }) : null),
        h('div', { class: 'count' }, 'desired ', h('b', { text: String(d.desired) }), arrow,
          h('small', { text: `ready ${d.ready} · rec ${d.recommended < 0 ? '–' : d.recommended} · ${d.state}` +
            (d.panic ? ' · panic' : '') + (d.activatorInPath ? ' · activator' : '') })),
        h('ul', { class: 'reasons' }, ...(d.reasons || []).map((r) =>
          h('li', {}, h('code', { class: codeClass(r.code), text: r.code }), h('span', { text: r.message })))),
        conds.length ? h('p', { class: 'conditions' }, ...conds.map((c) =>
          h('span', { class: c.status === 'True' ? 'cond-true' : 'cond-false', title: `${c.reason}: ${c.message}`,
            text: `${c.type} ${c.status} (${c.reason})` }))) : null,
      );
    }));
  }

  // ---- wiring ---------------------------------------------------------

  function fromHash() {
    const key = decodeURI(location.hash.slice(1));
    return key.includes('/') ? key : null;
  }

  function start() {
    state.selected = fromHash();
    window.addEventListener('hashchange', () => {
      const key = fromHash();
      if (key && key !== state.selected) { state.selected = key; render(); connect(); }
    });
    let frame = 0;
    const redraw = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; drawChart(); }); };
    window.addEventListener('resize', redraw);
    const svg = $('chart');
    svg.addEventListener('mousemove', (ev) => {
      const r = svg.getBoundingClientRect();
      state.hover = (ev.clientX - r.left) * ((svg.viewBox.baseVal.width || r.width) / r.width);
      redraw();
    });
    svg.addEventListener('mouseleave', () => { state.hover = null; redraw(); });
    render();
    connect();
  }

  start();
})();
