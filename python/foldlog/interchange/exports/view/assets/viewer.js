/* foldlog session viewer: builds the page from the JSON embedded in #foldlog-data.
   Markers for tools and tests: every event's row has data-seq (and data-kind), every message
   data-tokens, every fold's digest data-fold, every session's container data-session.
   The DOM is built in chunks (the first screen at once); bodies, outputs and contexts only
   when opened. URL fragment: #search=TEXT, #expand=SEQ (or SESSION:SEQ), #context=SEQ, #step=N. */
(function () {
  'use strict';
  const DATA = JSON.parse(document.getElementById('foldlog-data').textContent);
  const S = DATA.sessions;
  const app = document.getElementById('app');
  const rows = S.map(() => new Map());   // per session: seq -> row element
  const K = DATA.kinds;                 // the event types, named as foldlog.log.grammar.kinds names them
  const MESSAGE = new Set(K.MESSAGE_KINDS);
  const LONG = 4000;                     // characters of an output shown before "show all"

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  const NUMBER = new Intl.NumberFormat('en-US');  // one formatter: toLocaleString makes one per call
  const fmt = (n) => NUMBER.format(Number(n || 0));
  function money(cost) {
    if (!cost || typeof cost.total !== 'number') return '';
    const cur = cost.currency === 'USD' || !cost.currency ? '$' : cost.currency + ' ';
    return cur + (cost.total < 0.01 ? cost.total.toFixed(5) : cost.total.toFixed(4));
  }
  function when(ms) {
    if (!ms) return '';
    const d = new Date(ms);
    return isNaN(d) ? '' : d.toISOString().replace('T', ' ').slice(0, 19);
  }

  // --- reading events (a fork's first events are its parent's) ------------------------------
  function owner(si, seq) {
    let s = S[si];
    while (s && seq < s.first && s.parent !== null) s = S[s.parent];
    return s;
  }
  function eventOf(si, seq) {
    const s = owner(si, seq);
    return s ? s.events[seq - s.first] : undefined;
  }
  function tokensOf(si, seq) {
    const s = owner(si, seq);
    const n = s && s.tokens[String(seq)];
    return n === undefined ? null : n;
  }
  function blockText(b) {
    if (!b || typeof b !== 'object') return String(b);
    switch (b.type) {
      case 'text': return b.text || '';
      case 'image_url': case 'image': return '[image]';
      case 'tool_use': return '[tool_use ' + b.name + '] ' + JSON.stringify(b.input);
      case 'tool_result': return contentText(b.content);
      case 'thinking': return '[thinking] ' + (b.thinking || '');
      default: return '[' + b.type + ']';
    }
  }
  function contentText(c) {
    if (c === null || c === undefined) return '';
    if (typeof c === 'string') return c;
    if (Array.isArray(c)) return c.map(blockText).join('\n');
    return JSON.stringify(c);
  }
  function imagesOf(c) {
    const out = [];
    if (!Array.isArray(c)) return out;
    for (const b of c) {
      if (!b || typeof b !== 'object') continue;
      if (b.type === 'image_url' && b.image_url && typeof b.image_url.url === 'string') out.push(b.image_url.url);
      if (b.type === 'image' && b.source && b.source.type === 'base64') out.push('data:' + b.source.media_type + ';base64,' + b.source.data);
      if (b.type === 'image' && b.source && b.source.type === 'url') out.push(b.source.url);
    }
    return out;
  }
  function message(ev) {
    const d = ev.data || {};
    if (ev.type === K.ASSISTANT_MESSAGE || ev.type === K.TOOL_RESULT) return d.message || {};
    return d;
  }
  function calls(msg) {
    return (msg.tool_calls || []).map((c) => {
      const f = c.function || c;
      const args = typeof f.arguments === 'string' ? f.arguments : JSON.stringify(f.arguments || {});
      return { id: c.id || '', name: f.name || '', args: args };
    });
  }
  function eventText(ev) {
    const d = ev.data || {};
    if (MESSAGE.has(ev.type)) {
      const m = message(ev);
      let t = contentText(m.content);
      if (m.reasoning_content) t = m.reasoning_content + '\n' + t;
      for (const c of calls(m)) t += '\n' + c.name + ' ' + c.args;
      return t;
    }
    if (ev.type === K.TOOL_CALL) return d.name + ' ' + d.arguments;
    if (ev.type === K.TURN_END) return 'turn ' + d.turn + ' ' + ((d.reason || {}).kind || '');
    if (ev.type === K.COMPACTION_SUMMARY) return d.summary || '';
    return JSON.stringify(d);
  }
  function label(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case K.SYSTEM_MESSAGE: return 'system';
      case K.USER_MESSAGE: return d.source ? 'user · ' + d.source : 'user';
      case K.ASSISTANT_MESSAGE: return 'assistant';
      case K.TOOL_RESULT: return '← ' + ((d.message || {}).toolName || 'result') + ((d.message || {}).isError ? ' ✗' : '');
      case K.TOOL_CALL: return '→ ' + d.name;
      case K.TURN_START: return 'turn ' + d.turn + (d.resumed ? ' resumed (after ' + d.resumed + ')' : '');
      case K.TURN_END: return 'turn ' + d.turn + ' ended: ' + ((d.reason || {}).kind || '?');
      case K.APPROVAL_REQUEST: return 'waiting for approval: ' + (d.calls || []).map((c) => c.name + ' ' + c.callId).join(', ');
      case K.APPROVAL_ANSWER: return (d.approved ? 'approved ' : 'denied ') + d.callId + (d.reason ? ': ' + d.reason : '');
      case K.STEP_START: return 'step ' + d.turn + '.' + d.step;
      case K.STEP_END: return 'end of step ' + d.turn + '.' + d.step;
      default: return ev.type;
    }
  }

  // --- what happened to each message (folds, masks, replacements) ---------------------------
  const fates = S.map((s) => {
    const fate = new Map();
    s.events.forEach((ev) => {
      const op = ev.surfaceOp;
      if (!op || op === 'append' || typeof op !== 'object') return;
      const here = ev.seq;
      if (op.op === 'fold') for (const q of ev.sourceEventSeqs || []) fate.set(q, ['folded into', here]);
      if (op.op === 'mask') fate.set(op.seq, ['masked by', here]);
      if (op.op === 'replace') for (const q of ev.sourceEventSeqs || []) fate.set(q, ['replaced by', here]);
    });
    return { fate: fate, surface: new Set(s.surface) };
  });

  // --- the header: totals, the context bar, search ---------------------------------------------
  function header() {
    const root = S[0];
    const h = el('header', 'top');
    h.appendChild(el('h1', null, 'session ' + root.id));
    const meta = [];
    const imp = root.header && root.header.meta && root.header.meta.imported;
    if (imp) meta.push('imported from ' + imp.format + (imp.source ? ' (' + imp.source + ')' : ''));
    meta.push((root.model || 'no model named') + ' · counted with ' + root.tokenizer + (root.exact ? ' (exact)' : ' (estimated)'));
    const turns = root.events.filter((e) => e.type === K.TURN_START).length;
    meta.push(fmt(root.events.length) + ' events · ' + turns + ' turn(s)');
    const sp = root.spend || {};
    if (sp.requests) {
      const cost = sp.requests > sp.unpriced ? money({ total: sp.cost, currency: sp.currency }) : 'unpriced';
      const u = sp.usage || {};
      meta.push(sp.requests + ' request(s) · ' + cost + ' · ' + fmt(u.promptTokens) + ' in (' + fmt(u.cacheHitTokens) + ' cached) · ' + fmt(u.completionTokens) + ' out');
    }
    const parent = root.header && root.header.parent;
    if (parent && parent.kind === 'fork') meta.push('fork of ' + parent.id + ' after #' + parent.atSeq);
    if (parent && parent.kind === 'subagent') meta.push('sub-agent of ' + parent.id + ' (call ' + parent.callId + ')');
    if (S.length > 1) meta.push((S.length - 1) + ' sub-agent/fork session(s) inside');
    const red = Object.values(DATA.redacted || {}).reduce((a, b) => a + b, 0);
    meta.push(DATA.redact ? 'secrets redacted: ' + red : 'not redacted');
    h.appendChild(el('div', 'meta', meta.join('  ·  ')));
    if (root.context) h.appendChild(contextBar(root.context));
    const bar = el('div', 'tools');
    const input = el('input', 'search');
    input.type = 'search';
    input.placeholder = 'search (/)';
    input.id = 'search';
    const count = el('span', 'count');
    count.id = 'search-count';
    let timer = 0;
    input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => search(input.value), 150); });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); nextHit(e.shiftKey ? -1 : 1); }
      if (e.key === 'Escape') input.blur();
    });
    bar.append(input, count, el('span', 'keys', 'j/k or ↓/↑ steps · o open · c context · n/N next match · / search'));
    h.appendChild(bar);
    return h;
  }
  const COLORS = ['#8e7cc3', '#6fa8dc', '#999999', '#93c47d', '#f6b26b', '#76a5af', '#b6d7a8', '#e06666', '#ffd966', '#a4c2f4'];
  function contextBar(c) {
    const box = el('div', 'ctxbar');
    box.id = 'context-breakdown';
    const scale = c.window || c.total || 1;
    const bar = el('div', 'bar');
    const legend = el('div', 'legend');
    Object.entries(c.categories).forEach(([name, n], i) => {
      if (!n) return;
      const seg = el('span', 'seg');
      seg.style.width = (100 * n / scale) + '%';
      seg.style.background = COLORS[i % COLORS.length];
      seg.title = name + ': ' + fmt(n);
      seg.dataset.category = name;
      seg.dataset.categoryTokens = n;   // not data-tokens: that marks messages
      bar.appendChild(seg);
      const item = el('span', 'item', name + ' ' + fmt(n));
      item.style.borderColor = COLORS[i % COLORS.length];
      legend.appendChild(item);
    });
    if (c.trigger && c.window) {
      const t = el('span', 'trigger');
      t.style.left = (100 * c.trigger / c.window) + '%';
      t.title = 'compaction at ' + fmt(c.trigger);
      bar.appendChild(t);
    }
    const what = 'next request: ' + fmt(c.total) + ' tokens' + (c.window ? ' of ' + fmt(c.window) + ' (' + (100 * c.total / c.window).toFixed(1) + '%)' : ' (window unknown)') + (c.trigger ? ' · compaction at ' + fmt(c.trigger) : '');
    box.append(el('div', 'what', what), bar, legend);
    return box;
  }

  // --- rows -------------------------------------------------------------------------------------
  function row(si, ev) {
    const r = el('div', 'ev k-' + ev.type.replace('/', '-'));
    r.dataset.seq = ev.seq;
    r.dataset.kind = ev.type;
    r.dataset.si = si;
    const hd = el('div', 'hd');
    hd.appendChild(el('span', 'seq', '#' + ev.seq));
    hd.appendChild(el('span', 'kind', label(ev)));
    const s = S[si];
    const f = fates[si];
    if (MESSAGE.has(ev.type)) {
      const n = tokensOf(si, ev.seq);
      if (n !== null) { r.dataset.tokens = n; hd.appendChild(el('span', 'tok', fmt(n) + ' tok')); }
      const fate = f.fate.get(ev.seq);
      if (!f.surface.has(ev.seq)) {
        r.classList.add('gone');
        hd.appendChild(el('span', 'badge', fate ? fate[0] + ' #' + fate[1] : 'off the surface'));
      }
      const op = ev.surfaceOp;
      if (op && op.op === 'fold') {
        r.dataset.fold = ev.seq;
        r.classList.add('digest');
        hd.appendChild(el('span', 'badge fold', 'digest of ' + (ev.sourceEventSeqs || []).length + ' message(s) #' + op.start + '–#' + op.end));
      }
      if (op && op.op === 'mask') hd.appendChild(el('span', 'badge', 'stub of #' + op.seq));
    }
    if (ev.type === K.ASSISTANT_MESSAGE) {
      const req = s.requests[String(ev.seq)];
      if (req) hd.appendChild(usage(req, r));
      const c = el('button', 'ctxbtn', 'context');
      c.title = 'the history this request carried';
      c.addEventListener('click', (e) => { e.stopPropagation(); toggleContext(si, ev.seq, r); });
      hd.appendChild(c);
    }
    const text = eventText(ev);
    if (ev.type !== K.STEP_START && ev.type !== K.STEP_END && ev.type !== K.TURN_START) {
      hd.appendChild(el('span', 'pv', text.length > 240 ? text.slice(0, 240) + '…' : text));
    }
    if (MESSAGE.has(ev.type)) {
      for (const src of imagesOf(message(ev).content)) {
        if (!src.startsWith('data:')) continue;   // nothing from the network (the page's policy)
        const img = el('img', 'thumb');
        img.src = src;
        img.alt = 'image in #' + ev.seq;
        hd.appendChild(img);
      }
    }
    hd.addEventListener('click', () => toggle(r));
    r.appendChild(hd);
    rows[si].set(ev.seq, r);
    return r;
  }
  function usage(req, r) {
    const u = req.usage || {};
    const prompt = u.promptTokens || 0;
    const hit = u.cacheHitTokens || 0;
    let t = 'in ' + fmt(prompt);
    if (prompt) t += ' (cache ' + fmt(hit) + ', ' + Math.round(100 * hit / prompt) + '%)';
    t += ' · out ' + fmt(u.completionTokens);
    const m = money(req.cost);
    if (m) { t += ' · ' + m; r.dataset.cost = req.cost.total; }
    r.dataset.cacheHit = hit;
    return el('span', 'usage', t);
  }
  function pre(text, cls) {
    const p = el('pre', cls || null);
    if (text.length <= LONG) { p.textContent = text; return p; }
    p.textContent = text.slice(0, LONG);
    const more = el('button', 'more', 'show all ' + fmt(text.length) + ' characters');
    more.addEventListener('click', (e) => { e.stopPropagation(); p.textContent = text; more.remove(); });
    const box = el('div', 'long');
    box.append(p, more);
    return box;
  }
  function pretty(args) {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (e) { return String(args); }
  }
  function body(si, ev) {
    const b = el('div', 'bd');
    const d = ev.data || {};
    if (MESSAGE.has(ev.type)) {
      const m = message(ev);
      if (m.reasoning_content) {
        const r = el('details', 'reasoning');
        r.append(el('summary', null, 'reasoning'), pre(m.reasoning_content));
        b.appendChild(r);
      }
      b.appendChild(pre(contentText(m.content)));
      for (const src of imagesOf(m.content)) {
        if (!src.startsWith('data:')) { b.appendChild(el('div', 'note', 'image at ' + src + ' (not loaded: the page fetches nothing)')); continue; }
        const img = el('img', 'full');
        img.src = src;
        b.appendChild(img);
      }
      for (const c of calls(m)) b.appendChild(pre(c.name + ' ' + pretty(c.args), 'call'));
      if (ev.surfaceOp && ev.surfaceOp.op === 'fold') b.appendChild(folded(si, ev));
      if (d.meta) b.appendChild(pre('meta ' + JSON.stringify(d.meta, null, 2), 'meta'));
    } else if (ev.type === K.TOOL_CALL) {
      b.appendChild(pre(pretty(d.arguments), 'call'));
    } else {
      b.appendChild(pre(JSON.stringify(d, null, 2)));
    }
    const raw = el('details', 'raw');
    raw.appendChild(el('summary', null, 'event'));
    raw.addEventListener('toggle', () => { if (raw.open && raw.children.length === 1) raw.appendChild(pre(JSON.stringify(ev, null, 2))); });
    b.appendChild(raw);
    return b;
  }
  function folded(si, ev) {
    const box = el('div', 'folded');
    const seqs = ev.sourceEventSeqs || [];
    const keep = (ev.surfaceOp.keep || []);
    box.appendChild(el('div', 'note', 'this digest took the place of ' + seqs.length + ' message(s)' + (keep.length ? '; kept: #' + keep.join(', #') : '')));
    const list = el('div', 'list');
    for (const q of seqs) list.appendChild(mini(si, q));
    box.appendChild(list);
    return box;
  }
  function mini(si, q) {
    const e = eventOf(si, q);
    const n = tokensOf(si, q);
    const m = el('div', 'mini' + (n === null ? ' unsent' : ''));
    m.dataset.ref = q;
    const text = e ? eventText(e) : '';
    m.append(el('span', 'seq', '#' + q), el('span', 'kind', e ? label(e) : '?'), el('span', 'tok', n === null ? 'not sent' : fmt(n) + ' tok'), el('span', 'pv', text.slice(0, 160)));
    m.addEventListener('click', (x) => { x.stopPropagation(); jump(si, q); });
    return m;
  }
  function toggle(r, open) {
    const want = open === undefined ? !r.classList.contains('open') : open;
    if (want && !r.querySelector(':scope > .bd')) {
      const si = Number(r.dataset.si);
      r.appendChild(body(si, eventOf(si, Number(r.dataset.seq))));
    }
    r.classList.toggle('open', want);
  }

  // --- context at a request: the core's surface at the last rewrite before it, then appends -----
  function contextNodes(si, seq) {
    const s = S[si];
    let nodes = [];
    let from = 0;
    for (const [at, surface] of s.checkpoints) {
      if (at >= seq) break;
      nodes = surface;
      from = at + 1;
    }
    const out = nodes.slice();
    for (let q = from; q < seq; q++) {
      const e = eventOf(si, q);
      if (e && e.surfaceOp === 'append') out.push(q);
    }
    return out;
  }
  function toggleContext(si, seq, r) {
    const had = r.querySelector(':scope > .ctx');
    if (had) { had.remove(); return; }
    const nodes = contextNodes(si, seq);
    const sent = nodes.filter((q) => tokensOf(si, q) !== null);
    const total = sent.reduce((a, q) => a + tokensOf(si, q), 0);
    const box = el('div', 'ctx');
    box.dataset.context = seq;
    const req = S[si].requests[String(seq)];
    const reported = req && req.usage && req.usage.promptTokens ? ' · the provider reported ' + fmt(req.usage.promptTokens) + ' prompt tokens' : '';
    box.appendChild(el('div', 'note', 'context at this request: ' + sent.length + ' message(s), ' + fmt(total) + ' tokens of messages' + reported));
    const list = el('div', 'list');
    for (const q of nodes) list.appendChild(mini(si, q));
    box.appendChild(list);
    r.insertBefore(box, r.children[1] || null);
  }

  // --- building the timeline in chunks ----------------------------------------------------------
  const queue = [];
  function* build(si, into) {
    const s = S[si];
    const box = el('div', 'session role-' + s.role);
    box.dataset.session = s.id;
    into.appendChild(box);
    if (si !== 0) {
      const sp = s.spend || {};
      const what = s.role === 'fork' ? 'fork ' + s.id + ' (after #' + s.atSeq + ')' : 'sub-agent ' + s.id;
      const t = el('div', 'shead', what + ' · ' + s.events.length + ' events' + (sp.requests ? ' · ' + sp.requests + ' request(s) ' + money({ total: sp.cost, currency: sp.currency }) : ''));
      t.addEventListener('click', () => into.classList.toggle('closed'));
      box.appendChild(t);
    }
    const inherited = s.role === 'root' && s.header && s.header.parent && s.header.parent.kind === 'fork' ? s.header.parent.atSeq : -1;
    let turn = null;
    let step = null;
    const placed = new Set();
    for (const ev of s.events) {
      if (ev.type === K.TURN_START) { turn = el('div', 'turn'); turn.dataset.turn = (ev.data || {}).turn; box.appendChild(turn); step = null; }
      if (ev.type === K.STEP_START) {
        step = el('div', 'step');
        step.dataset.step = (ev.data || {}).turn + '.' + (ev.data || {}).step;
        step.tabIndex = -1;
        (turn || box).appendChild(step);
      }
      const r = row(si, ev);
      if (ev.seq <= inherited) r.classList.add('inherited');
      (step || turn || box).appendChild(r);
      if (ev.type === K.STEP_END) step = null;
      if (ev.type === K.TURN_END) { turn = null; step = null; }
      if (ev.type === K.TOOL_CALL && s.children[(ev.data || {}).callId] !== undefined) {
        const ci = s.children[ev.data.callId];
        placed.add(ci);
        nest(ci, r, 'child');
      }
      for (const fi of s.forks) if (S[fi].atSeq === ev.seq) { placed.add(fi); nest(fi, r, 'forkbox'); }
      yield;
    }
    const rest = s.subagents.concat(s.forks).filter((ci) => !placed.has(ci));
    if (rest.length) {
      const other = el('div', 'orphans');
      other.appendChild(el('div', 'note', 'sub-agents and forks whose call or event is not in this log'));
      box.appendChild(other);
      for (const ci of rest) nest(ci, other, 'child');
    }
  }
  function nest(ci, after, cls) {
    const holder = el('div', cls + ' closed');
    after.appendChild(holder);
    queue.push(build(ci, holder));
  }
  function pump(budget) {
    const end = performance.now() + budget;
    while (queue.length) {
      if (queue[0].next().done) queue.shift();
      if (performance.now() > end) return false;
    }
    return true;
  }
  function finish() { pump(Infinity); }
  // the next chunk as soon as the browser has drawn and handled input (a message, not a timer:
  // nested timers are clamped and throttled)
  const channel = new MessageChannel();
  let pending = null;
  channel.port1.onmessage = () => { const f = pending; pending = null; if (f) f(); };
  function later(f) { pending = f; channel.port2.postMessage(0); }
  function run(first) {
    const done = pump(first ? 60 : 30);
    // the first screen is up: the page's clock since navigation started (the viewer's test reads it)
    if (first) document.documentElement.dataset.firstMs = Math.round(performance.now());
    if (!done) { later(() => run(false)); return; }
    document.documentElement.dataset.ready = '1';
    fromHash();
  }

  // --- moving around: jump, steps, search ---------------------------------------------------------
  function reveal(node) {
    for (let p = node.parentElement; p; p = p.parentElement) if (p.classList.contains('closed')) p.classList.remove('closed');
  }
  function jump(si, seq) {
    finish();
    const s = owner(si, seq);
    const r = rows[S.indexOf(s)].get(seq);
    if (!r) return null;
    reveal(r);
    r.scrollIntoView({ block: 'center' });
    r.classList.add('flash');
    setTimeout(() => r.classList.remove('flash'), 1200);
    return r;
  }
  let current = null;
  function steps() { return Array.from(document.querySelectorAll('.step')).filter((e) => e.offsetParent !== null); }
  function moveStep(delta) {
    const all = steps();
    if (!all.length) return;
    let i = current ? all.indexOf(current) : -1;
    i = Math.max(0, Math.min(all.length - 1, i + delta));
    setCurrent(all[i]);
  }
  function setCurrent(step) {
    if (current) { current.classList.remove('current'); delete current.dataset.current; }
    current = step;
    step.classList.add('current');
    step.dataset.current = '1';
    step.scrollIntoView({ block: 'nearest' });
  }
  let hits = [];
  let hitAt = -1;
  const hay = S.map(() => new Map());
  function search(q) {
    finish();
    for (const h of hits) { h.classList.remove('hit'); delete h.dataset.hit; }
    hits = [];
    hitAt = -1;
    const needle = q.trim().toLowerCase();
    const count = document.getElementById('search-count');
    if (!needle) { count.textContent = ''; return; }
    S.forEach((s, si) => {
      for (const ev of s.events) {
        let t = hay[si].get(ev.seq);
        if (t === undefined) { t = (label(ev) + ' ' + eventText(ev)).toLowerCase(); hay[si].set(ev.seq, t); }
        if (t.includes(needle)) {
          const r = rows[si].get(ev.seq);
          if (r) { r.classList.add('hit'); r.dataset.hit = '1'; hits.push(r); }
        }
      }
    });
    count.textContent = hits.length + ' match' + (hits.length === 1 ? '' : 'es');
    count.dataset.hits = hits.length;
    if (hits.length) nextHit(1);
  }
  function nextHit(delta) {
    if (!hits.length) return;
    hitAt = (hitAt + delta + hits.length) % hits.length;
    const r = hits[hitAt];
    reveal(r);
    r.scrollIntoView({ block: 'center' });
    document.querySelectorAll('.ev.hitnow').forEach((e) => e.classList.remove('hitnow'));
    r.classList.add('hitnow');
  }
  document.addEventListener('keydown', (e) => {
    const typing = e.target && (e.target.tagName === 'INPUT' || e.target.tagName === 'TEXTAREA');
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k === 'j' || k === 'ArrowDown') { moveStep(1); e.preventDefault(); }
    else if (k === 'k' || k === 'ArrowUp') { moveStep(-1); e.preventDefault(); }
    else if ((k === 'o' || k === 'Enter') && current) {
      const evs = current.querySelectorAll(':scope > .ev');
      const open = !Array.from(evs).every((r) => r.classList.contains('open'));
      evs.forEach((r) => toggle(r, open));
    } else if (k === 'c' && current) {
      const a = current.querySelector(':scope > .ev[data-kind="' + K.ASSISTANT_MESSAGE + '"]');
      if (a) toggleContext(Number(a.dataset.si), Number(a.dataset.seq), a);
    } else if (k === 'n' || k === 'N') nextHit(k === 'n' ? 1 : -1);
    else if (k === '/') { e.preventDefault(); document.getElementById('search').focus(); }
  });
  function sessionIndex(ref) {
    const i = S.findIndex((s) => s.id === ref);
    return i < 0 ? 0 : i;
  }
  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const target = (v) => {
      const cut = v.lastIndexOf(':');
      return cut < 0 ? [0, Number(v)] : [sessionIndex(v.slice(0, cut)), Number(v.slice(cut + 1))];
    };
    for (const v of params.getAll('expand')) { const [si, q] = target(v); const r = jump(si, q); if (r) toggle(r, true); }
    for (const v of params.getAll('context')) {
      const [si, q] = target(v);
      const r = jump(si, q);
      if (r && !r.querySelector(':scope > .ctx')) toggleContext(si, q, r);
    }
    if (params.has('step')) { const all = steps(); const n = Number(params.get('step')) - 1; if (all[n]) setCurrent(all[n]); }
    if (params.has('search')) { const q = params.get('search'); document.getElementById('search').value = q; search(q); }
  }
  window.addEventListener('hashchange', fromHash);

  if (DATA.version !== 1) { app.textContent = 'this page holds data of another viewer version'; return; }
  app.textContent = '';
  app.appendChild(header());
  const main = el('main', 'timeline');
  app.appendChild(main);
  queue.push(build(0, main));
  run(true);
})();
