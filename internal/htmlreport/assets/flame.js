// hotbudget's flame graph: an icicle drawn on one canvas. Width is time;
// in a comparison, colour is the change of the compared metric. It draws
// only what is visible: frames narrower than MINPX are summed into one
// grey block per parent, so a tree of 200,000 frames draws in milliseconds.
// State for tests: window.__hotbudget.
(function () {
  'use strict';
  const hb = window.__hotbudget = { ready: false, errors: [] };
  window.addEventListener('error', function (e) { hb.errors.push(String(e.message || e)); });

  const ROW = 18;      // px per frame row
  const MINPX = 2;     // narrower frames are summed per parent
  const FONT = '12px ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace';

  const T = hb.timings = {};
  let tick = performance.now();
  function lap(what) { const now = performance.now(); T[what] = Math.round(now - tick); tick = now; }
  T.start = Math.round(tick);
  const D = JSON.parse(document.getElementById('hb-data').textContent);
  lap('parse');
  if (!D) { hb.nodes = 0; hb.readyMs = performance.now(); hb.ready = true; return; }

  const N = D.name.length;
  const inv = 1 / D.mult;
  const names = D.names;
  const nameIx = Int32Array.from(D.name);
  const depth = Int32Array.from(D.depth);
  const others = Int32Array.from(D.others);
  const hs = Float64Array.from(D.hs), ht = Float64Array.from(D.ht);
  const bs = D.diff ? Float64Array.from(D.bs) : null, bt = D.diff ? Float64Array.from(D.bt) : null;
  const change = new Float64Array(N).fill(NaN);
  const pv = new Float64Array(N).fill(NaN), qv = new Float64Array(N).fill(NaN);
  const sig = new Uint8Array(N);
  if (D.diff) {
    // Change of the compared metric against the yardstick's scale; tested
    // frames carry theirs, computed from the runs as a function's.
    const mb = D.metric === 'total' ? bt : bs, mh = D.metric === 'total' ? ht : hs, sc = D.scale;
    for (let i = 0; i < N; i++) {
      if (others[i] || (mb[i] <= 0 && mh[i] <= 0)) continue;
      change[i] = mb[i] > 0 && sc > 0 ? mh[i] / (sc * mb[i]) - 1 : 1e9;
    }
    const t = D.tested;
    for (let k = 0; k < t.i.length; k++) {
      const i = t.i[k];
      pv[i] = t.p[k]; qv[i] = t.q[k]; sig[i] = t.sig[k];
      change[i] = t.change[k] === null ? NaN : t.change[k];
    }
  }
  // Marks by name: 1 regressed, 2 improved, 3 new, 4 gone.
  const markCode = { regressed: 1, improved: 2, new: 3, gone: 4 };
  const mark = new Uint8Array(names.length);
  for (const k in D.marks) mark[+k] = markCode[D.marks[k]] || 0;

  // Tree structure from depths in pre-order.
  const parent = new Int32Array(N), end = new Int32Array(N), maxd = new Int32Array(N);
  {
    const st = [];
    for (let i = 0; i < N; i++) {
      while (st.length && depth[st[st.length - 1]] >= depth[i]) end[st.pop()] = i;
      parent[i] = st.length ? st[st.length - 1] : -1;
      st.push(i);
    }
    while (st.length) end[st.pop()] = N;
    for (let i = 0; i < N; i++) maxd[i] = depth[i];
    for (let i = N - 1; i > 0; i--) { const p = parent[i]; if (maxd[i] > maxd[p]) maxd[p] = maxd[i]; }
  }

  lap('prepare');
  // Layout: x of each frame along the chosen side's total.
  const X = new Float64Array(N);
  let W = ht, widthBy = 'head';
  function layout() {
    const cur = new Float64Array((N ? maxd[0] : 0) + 2);
    for (let i = 0; i < N; i++) {
      const d = depth[i];
      X[i] = cur[d];
      cur[d] += W[i];
      cur[d + 1] = X[i];
    }
  }
  layout();
  lap('layout');

  const canvas = document.getElementById('hb-canvas');
  const ctx = canvas.getContext('2d');
  const wrap = canvas.parentElement;
  const tip = document.getElementById('hb-tip');
  const search = document.getElementById('hb-search');
  const matchInfo = document.getElementById('hb-match');
  const crumbs = document.getElementById('hb-crumbs');
  ctx.font = FONT;
  const charW = ctx.measureText('mmmmmmmmmm').width / 10 || 7;

  let zoom = 0;
  let matchName = null;  // Uint8Array by name index, or null
  let hover = -1;
  let drawnList = [];    // [node, px, pw] of the frames drawn last

  // ---- formatting ----
  function fmtVal(v) {
    v *= inv;
    if (D.unit === 'share') {
      const p = v * 100;
      return (p !== 0 && Math.abs(p) < 0.01 ? p.toFixed(4) : p.toFixed(2)) + '%';
    }
    if (D.unit === 'x') return v.toFixed(3) + 'x';
    if (D.unit === 'bytes') {
      const b = Math.abs(v);
      if (b >= 1048576) return (v / 1048576).toFixed(2) + 'MiB';
      if (b >= 1024) return (v / 1024).toFixed(2) + 'KiB';
      return (Math.round(v * 100) / 100) + 'B';
    }
    return fmtNanos(v);
  }
  // BEGIN fmtNanos: textfmt.Nanos, the one duration format of every
  // report (internal/htmlreport's test runs this against it).
  function fmtNanos(ns) {
    if (ns === 0) return '0';
    let v = Math.abs(ns), unit = 'ns';
    if (v >= 3600e9) { v /= 3600e9; unit = 'hrs'; }
    else if (v >= 60e9) { v /= 60e9; unit = 'mins'; }
    else if (v >= 1e9) { v /= 1e9; unit = 's'; }
    else if (v >= 1e6) { v /= 1e6; unit = 'ms'; }
    else if (v >= 1e3) { v /= 1e3; unit = 'us'; }
    let s = v.toFixed(2);
    if (s.endsWith('.00')) s = s.slice(0, -3);
    return (ns < 0 ? '-' : '') + s + unit;
  }
  // END fmtNanos
  function fmtChange(c) {
    if (isNaN(c)) return '–';
    if (c >= 1e8) return 'new';
    return (c >= 0 ? '+' : '') + (c * 100).toFixed(1) + '%';
  }
  function fmtP(p) { return isNaN(p) ? '' : (p < 1e-4 ? p.toExponential(1) : p.toPrecision(2)); }
  function esc(s) { return s.replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; }); }

  // ---- colour ----
  function hash(s) { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return h >>> 0; }
  const pkgColor = new Map();
  function singleColor(i) {
    const n = names[nameIx[i]];
    const dot = n.lastIndexOf('.', n.indexOf('(') >= 0 ? n.indexOf('(') : n.length);
    const pkg = dot > 0 ? n.slice(0, dot) : n;
    let c = pkgColor.get(pkg);
    if (!c) {
      const h = hash(pkg);
      c = 'hsl(' + (8 + h % 42) + ',' + (62 + (h >> 8) % 20) + '%,' + (62 + (h >> 16) % 12) + '%)';
      pkgColor.set(pkg, c);
    }
    return c;
  }
  function diffColor(i) {
    const c = change[i];
    if (isNaN(c)) return '#e6e3dc';
    let a = c >= 1e8 ? 1 : Math.min(Math.abs(c) / 0.5, 1);
    // Beyond the noise: strong from small changes on; within it, a tint;
    // too small to test, a trace of one.
    a = sig[i] ? Math.sqrt(a) : (isNaN(pv[i]) ? 0.1 : 0.3) * a;
    const hue = c > 0 ? 2 : 212;
    return 'hsl(' + hue + ',' + (15 + 70 * a).toFixed(0) + '%,' + (90 - 32 * a).toFixed(0) + '%)';
  }
  const colorOf = D.diff ? diffColor : singleColor;

  // ---- drawing ----
  function label(i, room) {
    let s = others[i] ? others[i] + ' smaller frames' : names[nameIx[i]];
    const m = mark[nameIx[i]];
    if (!others[i] && (m === 1 || m === 3)) s = '▲ ' + s;
    else if (!others[i] && (m === 2 || m === 4)) s = '▼ ' + s;
    const max = Math.floor(room / charW);
    if (max < 3) return '';
    // A change beyond the noise is written after the name when it fits.
    if (sig[i]) {
      const t = s + '  ' + fmtChange(change[i]);
      if (t.length <= max) return t;
    }
    if (s.length <= max) return s;
    // Too long: drop the import path, then the package, before cutting.
    let mk = '';
    if (s.startsWith('▲ ') || s.startsWith('▼ ')) { mk = s.slice(0, 2); s = s.slice(2); }
    const paren = s.indexOf('(');
    const head = paren >= 0 ? s.slice(0, paren) : s;
    const slash = head.lastIndexOf('/');
    if (slash >= 0) {
      s = s.slice(slash + 1);
      if (mk.length + s.length <= max) return mk + s;
    }
    const dot = s.indexOf('.');
    if (dot > 0 && dot < s.length - 1 && (paren < 0 || dot < s.indexOf('('))) {
      s = s.slice(dot + 1);
      if (mk.length + s.length <= max) return mk + s;
    }
    s = mk + s;
    return s.slice(0, max - 1) + '…';
  }
  function frame(i, px, pw, dim) {
    const y = depth[i] * ROW;
    const matched = matchName && !others[i] && matchName[nameIx[i]];
    let fill;
    if (others[i]) fill = '#d0d4d9';
    else if (matched) fill = 'rgb(230,0,230)';
    else fill = colorOf(i);
    ctx.globalAlpha = dim ? 0.55 : 1;
    ctx.fillStyle = fill;
    ctx.fillRect(px, y, Math.max(pw - 1, 1), ROW - 1);
    const m = others[i] ? 0 : mark[nameIx[i]];
    if (m && pw >= 4) {
      ctx.strokeStyle = m === 2 || m === 4 ? '#0550ae' : '#a40e26';
      ctx.lineWidth = 2;
      ctx.strokeRect(px + 1, y + 1, Math.max(pw - 3, 1), ROW - 3);
    }
    if (i === hover) {
      ctx.strokeStyle = '#1f2328';
      ctx.lineWidth = 1;
      ctx.strokeRect(px + 0.5, y + 0.5, Math.max(pw - 2, 1), ROW - 2);
    }
    if (pw > 3 * charW + 6) {
      const s = label(i, pw - 6);
      if (s) {
        ctx.fillStyle = matched ? '#fff' : '#1f2328';
        ctx.fillText(s, px + 3, y + ROW / 2 + 0.5);
      }
    }
    ctx.globalAlpha = 1;
    drawnList.push(i, px, pw);
  }
  // plan lists what the current zoom shows: [node, px, pw] per frame
  // (agg < 0) and per block of summed narrow frames (node = first of them),
  // and the deepest row used, so that the canvas is as tall as needed.
  function plan(cssW) {
    const out = [];
    let rows = depth[zoom], agg = 0;
    const x0 = X[zoom], sc = W[zoom] > 0 ? cssW / W[zoom] : 0;
    for (let a = parent[zoom]; a >= 0; a = parent[a]) out.push(a, 0, cssW, 0);
    const stack = [zoom];
    while (stack.length) {
      const i = stack.pop();
      const px = (X[i] - x0) * sc, pw = W[i] * sc;
      out.push(i, px, pw, 0);
      if (depth[i] > rows) rows = depth[i];
      // Children: wide ones drawn, narrow runs summed into one block.
      let ax = -1, aw = 0, af = -1;
      for (let c = i + 1; c < end[i]; c = end[c]) {
        const cw = W[c] * sc;
        if (cw >= MINPX) {
          stack.push(c);
          continue;
        }
        if (cw <= 0) continue;
        if (ax < 0) { ax = (X[c] - x0) * sc; af = c; }
        aw += cw;
        if (aw >= MINPX) { out.push(af, ax, aw, 1); agg++; ax = -1; aw = 0; }
      }
      if (ax >= 0 && aw >= 0.5) { out.push(af, ax, aw, 1); agg++; }
      if (agg && depth[i] + 1 > rows) rows = depth[i] + 1;
    }
    return { items: out, rows: rows + 1, agg: agg };
  }
  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const cssW = Math.max(wrap.clientWidth - 2, 100);
    const pl = plan(cssW);
    const cssH = pl.rows * ROW;
    canvas.style.height = cssH + 'px';
    canvas.width = Math.round(cssW * dpr);
    canvas.height = Math.round(cssH * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    drawnList = [];
    let drawn = 0;
    const marked = new Set();
    const it = pl.items;
    for (let k = 0; k < it.length; k += 4) {
      const i = it[k];
      if (it[k + 3]) { aggBlock(i, it[k + 1], it[k + 2]); continue; }
      frame(i, it[k + 1], it[k + 2], depth[i] < depth[zoom]);
      drawn++;
      if (!others[i] && mark[nameIx[i]] && depth[i] >= depth[zoom]) marked.add(names[nameIx[i]]);
    }
    hb.drawn = drawn;
    hb.aggregated = pl.agg;
    hb.marked = Array.from(marked).sort();
    hb.zoomed = names[nameIx[zoom]];
    hb.canvasHeight = cssH;
  }
  function aggBlock(c, px, pw) {
    ctx.fillStyle = '#c4c9cf';
    ctx.fillRect(px, depth[c] * ROW, Math.max(pw - 0.5, 0.5), ROW - 1);
  }

  // ---- hit testing ----
  function hit(mx, my) {
    const d = Math.floor(my / ROW);
    if (d < 0 || d > maxd[zoom]) return -1;
    if (d <= depth[zoom]) {
      let a = zoom;
      while (depth[a] > d) a = parent[a];
      return a;
    }
    const cssW = canvas.clientWidth;
    const sc = W[zoom] > 0 ? cssW / W[zoom] : 0;
    if (!sc) return -1;
    const v = X[zoom] + mx / sc;
    let n = zoom;
    while (depth[n] < d) {
      let found = -1;
      for (let c = n + 1; c < end[n]; c = end[c]) {
        if (v >= X[c] && v < X[c] + W[c]) { found = c; break; }
      }
      if (found < 0 || W[found] * sc < MINPX) return -1;
      n = found;
    }
    return n;
  }

  // ---- tooltip ----
  function tipHTML(i) {
    const nm = others[i] ? others[i] + ' smaller frames, summed' : names[nameIx[i]];
    let h = '<div class="n">' + esc(nm) + '</div>';
    if (!D.diff) {
      h += '<table><tr><td>self</td><td>' + fmtVal(hs[i]) + '</td></tr><tr><td>total</td><td>' + fmtVal(ht[i]) + '</td></tr></table>';
      if (i !== zoom) h += '<div class="m">click to zoom</div>';
      return h;
    }
    h += '<table><tr><th></th><th>base</th><th>head</th></tr>' +
      '<tr><td>self</td><td>' + fmtVal(bs[i]) + '</td><td>' + fmtVal(hs[i]) + '</td></tr>' +
      '<tr><td>total</td><td>' + fmtVal(bt[i]) + '</td><td>' + fmtVal(ht[i]) + '</td></tr></table>';
    if (!others[i]) {
      h += '<div>change (' + D.metric + ' time of this path): <b>' + fmtChange(change[i]) + '</b>';
      if (!isNaN(pv[i])) {
        h += ', p=' + fmtP(pv[i]) + ', q=' + fmtP(qv[i]) + (sig[i] ? ' <b>beyond noise</b>' : ' <span class="m">within noise or below the minimum change</span>');
        const note = D.tested.note && D.tested.note[i];
        if (note) h += '<div class="m">' + esc(note) + '</div>';
      } else if (!isNaN(change[i])) {
        h += ' <span class="m">(too small to test)</span>';
      }
      h += '</div>';
      const m = mark[nameIx[i]];
      if (m) {
        const v = ['', 'regressed', 'improved', 'new', 'gone'][m];
        h += '<div>function verdict: <span class="v-' + v + '">' + v + '</span> (see the table)</div>';
      }
    }
    h += '<div class="m">' + (D.runs > 1 ? 'values: means over runs; ' : '') + 'change: against the profile at large, as in the table' + (i !== zoom ? '; click to zoom' : '') + '</div>';
    return h;
  }
  function showTip(i, ev) {
    if (i < 0) { tip.hidden = true; return; }
    tip.innerHTML = tipHTML(i);
    tip.hidden = false;
    const r = tip.getBoundingClientRect();
    let x = ev.clientX + 14, y = ev.clientY + 16;
    if (x + r.width > window.innerWidth - 4) x = Math.max(4, ev.clientX - r.width - 14);
    if (y + r.height > window.innerHeight - 4) y = Math.max(4, ev.clientY - r.height - 12);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }

  // ---- zoom, crumbs ----
  function setZoom(i) {
    if (i < 0 || i >= N || others[i]) return;
    zoom = i;
    hover = -1;
    tip.hidden = true;
    const path = [];
    for (let a = i; a >= 0; a = parent[a]) path.push(a);
    path.reverse();
    if (path.length === 1) {
      crumbs.textContent = 'Click a frame to zoom in, hover for its numbers, / to search, Esc to zoom out.' +
        (D.pruned ? ' (' + N.toLocaleString('en') + ' frames; ' + D.pruned.toLocaleString('en') + ' smaller ones left out.)' : '');
    } else {
      crumbs.innerHTML = path.map(function (a, k) {
        const n = esc(names[nameIx[a]]);
        return k === path.length - 1 ? '<b>' + n + '</b>' : '<a data-i="' + a + '">' + n + '</a>';
      }).join(' › ');
    }
    draw();
  }
  crumbs.addEventListener('click', function (e) {
    const a = e.target.closest('a[data-i]');
    if (a) setZoom(+a.dataset.i);
  });

  // ---- search ----
  // An HTML attribute holds a name as the HTML parser read it: NUL as
  // U+FFFD, CR LF and CR as LF. norm reads a name of the data so.
  function norm(s) { return s.replace(/\r\n?/g, '\n').replace(/\0/g, '\uFFFD'); }
  // setSearch marks the frames whose name matches q, a pattern or, when
  // the pattern cannot be used, text; or, with exact, the frames of the
  // function of that name (a click on a name in the table).
  function setSearch(q, exact) {
    search.classList.remove('bad');
    if (!q) {
      matchName = null;
      matchInfo.textContent = '';
      hb.matches = 0;
      hb.matchShare = 0;
      draw();
      return;
    }
    // A pattern V8 cannot compile (bad syntax, or "Regular expression too
    // large", which V8 throws on first use rather than in the constructor)
    // is searched for as plain text.
    let re;
    if (exact !== undefined) re = { test: function (s) { return norm(s) === exact; } };
    else try { re = new RegExp(q, 'i'); re.test(''); } catch (e) {
      search.classList.add('bad');
      const lq = q.toLowerCase();
      re = { test: function (s) { return s.toLowerCase().indexOf(lq) >= 0; } };
    }
    const plain = re;
    re = { test: function (s) { try { return plain.test(s); } catch (e) { return s.toLowerCase().indexOf(q.toLowerCase()) >= 0; } } };
    matchName = new Uint8Array(names.length);
    for (let k = 0; k < names.length; k++) if (re.test(names[k])) matchName[k] = 1;
    let count = 0, val = 0;
    for (let i = 0; i < N; i++) if (!others[i] && matchName[nameIx[i]]) count++;
    for (let i = 0; i < N;) {
      if (!others[i] && matchName[nameIx[i]]) { val += W[i]; i = end[i]; } else i++;
    }
    const share = W[0] > 0 ? val / W[0] : 0;
    hb.matches = count;
    hb.matchShare = share;
    matchInfo.textContent = count ? count + ' frame' + (count === 1 ? '' : 's') + ' · ' + (share * 100).toFixed(1) + '% of ' + (D.diff ? widthBy : 'the profile') : 'no match';
    draw();
  }
  let searchTimer = 0;
  search.addEventListener('input', function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { setSearch(search.value); }, 120);
  });
  search.addEventListener('keydown', function (e) {
    if (e.key === 'Enter') { clearTimeout(searchTimer); setSearch(search.value); }
  });

  // ---- events ----
  canvas.addEventListener('mousemove', function (e) {
    const r = canvas.getBoundingClientRect();
    const i = hit(e.clientX - r.left, e.clientY - r.top);
    if (i !== hover) { hover = i; draw(); }
    showTip(i, e);
  });
  canvas.addEventListener('mouseleave', function () { hover = -1; tip.hidden = true; draw(); });
  canvas.addEventListener('click', function (e) {
    const r = canvas.getBoundingClientRect();
    const i = hit(e.clientX - r.left, e.clientY - r.top);
    if (i < 0) return;
    setZoom(i === zoom && parent[i] >= 0 ? parent[i] : i);
  });
  document.getElementById('hb-reset').addEventListener('click', function () { setZoom(0); });
  document.addEventListener('keydown', function (e) {
    if (e.key === '/' && document.activeElement !== search) { e.preventDefault(); search.focus(); }
    else if (e.key === 'Escape') {
      if (document.activeElement === search && search.value) { search.value = ''; setSearch(''); }
      else setZoom(0);
    }
  });
  if (D.diff) {
    const wb = document.getElementById('hb-widthby');
    wb.hidden = false;
    wb.addEventListener('change', function (e) {
      widthBy = e.target.value;
      W = widthBy === 'base' ? bt : ht;
      layout();
      if (W[zoom] <= 0) zoom = 0;
      setSearch(search.value);
      setZoom(zoom);
    });
  }
  document.querySelectorAll('a.hb-fn').forEach(function (a) {
    a.addEventListener('click', function () {
      // A long name (up to a profile's whole input) is searched for as
      // text: as a pattern it would be too large for V8.
      const fn = a.dataset.fn;
      const q = fn.length > 1000 ? fn : '^' + fn.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
      search.value = q;
      setSearch(q, fn);
    });
  });
  let pending = false;
  window.addEventListener('resize', function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; draw(); });
  });

  // ---- legend ----
  const legend = document.getElementById('hb-legend');
  if (D.diff) {
    const grad = [];
    for (let k = -5; k <= 5; k++) {
      const c = k / 10, a = Math.sqrt(Math.min(Math.abs(c) / 0.5, 1));
      grad.push('hsl(' + (c > 0 ? 2 : 212) + ',' + (15 + 70 * a).toFixed(0) + '%,' + (90 - 32 * a).toFixed(0) + '%)');
    }
    const bytes = D.unit === 'bytes';  // an allocation comparison: exact bytes, no noise
    legend.innerHTML = '<span class="key">' + (bytes ? 'less' : 'faster') + ' −50%</span><span class="bar" style="background:linear-gradient(90deg,' + grad.join(',') + ')"></span><span class="key">+50% ' + (bytes ? 'more' : 'slower') + '</span>' +
      '<span class="key">· colour = change of ' + (bytes ? 'bytes allocated, faded within the tolerance' : esc(D.metric) + ' time, faded within noise') + '</span>' +
      '<span class="key">· <span class="sw" style="border:2px solid #a40e26"></span>▲ regressed function</span>' +
      '<span class="key"><span class="sw" style="background:rgb(230,0,230)"></span>match</span>';
  } else {
    legend.textContent = 'width = total time · colour = package';
  }

  // ---- for tests ----
  hb.nodes = N;
  hb.pruned = D.pruned;
  // frameRect finds the widest drawn frame of a function ("pkg.F"), or of
  // a call path ("main;handler;pkg.F": the frame and its callers above).
  hb.frameRect = function (name) {
    const path = name.split(';');
    const fits = function (i) {
      if (others[i] || names[nameIx[i]] !== path[path.length - 1]) return false;
      let a = parent[i];
      for (let k = path.length - 2; k >= 0; k--, a = parent[a]) {
        if (a < 0 || names[nameIx[a]] !== path[k]) return false;
      }
      return true;
    };
    let best = -1;
    for (let k = 0; k < drawnList.length; k += 3) {
      const i = drawnList[k];
      if (fits(i) && (best < 0 || drawnList[k + 2] > drawnList[best + 2])) best = k;
    }
    if (best < 0) return null;
    const r = canvas.getBoundingClientRect();
    const i = drawnList[best];
    return { x: r.left + drawnList[best + 1], y: r.top + depth[i] * ROW, w: drawnList[best + 2], h: ROW - 1 };
  };
  hb.widthBy = function () { return widthBy; };

  lap('wire');
  setZoom(0);
  lap('draw');
  hb.readyMs = performance.now();
  hb.ready = true;
})();
