// app.js: the console's page: the runs, or one run kept live by server-sent events, and the operator's answers (POSTed as JSON).
'use strict';

const $main = document.getElementById('main');
const $crumb = document.getElementById('crumb');
const $live = document.getElementById('live');

// Builds an element; strings become text (never HTML), so nothing a run says is run as markup.
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const fix = (x, d = 1) => (typeof x === 'number' && isFinite(x) ? x.toFixed(d) : '–');
const de = (x, d = 2) => (typeof x === 'number' && x >= 0 ? x.toFixed(d) : '–'); // -1 or null: not measured yet
const age = (s) => (typeof s !== 'number' ? 'none' : s < 90 ? `${fix(s, 0)} s` : s < 5400 ? `${fix(s / 60, 0)} min` : `${fix(s / 3600, 1)} h`);
const badge = (state, stale) => h('span', { class: `badge ${stale ? 'stale' : state}` }, stale ? 'STALE' : state);
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// The canvas's figures, or that it has not been observed (null), never a made-up 0.
const canvasDe = (r) => (typeof r.mean_de00 === 'number' ? `ΔE00 ${fix(r.mean_de00, 2)} (p95 ${fix(r.p95_de00, 1)})` : 'not observed yet');

// What waits for a person: questions of the gate, subtasks deferred, colours no mix reached.
function waitingBadges(r) {
  const out = [];
  if (r.waiting) out.push(h('span', { class: 'badge waiting' }, plural(r.waiting, 'question', 'questions')));
  if (r.subtasks_waiting) out.push(h('span', { class: 'badge waiting' }, `${plural(r.subtasks_waiting, 'subtask waits', 'subtasks wait')}`));
  if (r.colours_waiting) out.push(h('span', { class: 'badge waiting' }, `${plural(r.colours_waiting, 'colour waits', 'colours wait')}`));
  return out;
}

// Where the plan under way stands, in words: a finished run is not the last round's counts.
function progressWords(r) {
  const c = r.subtask_counts || {};
  const strokes = `${r.strokes_done ?? 0}/${r.strokes_total ?? 0} strokes`;
  if (!r.subtasks) return r.state === 'running' ? 'planning' : 'no plan yet';
  const round = r.round ? ` · correction round ${r.round}` : '';
  if (r.state === 'finished') return `${strokes} · finished${r.round ? ` after ${plural(r.round, 'correction round', 'correction rounds')}` : ''}`;
  const parts = [`${c.done || 0} of ${r.subtasks} subtasks done`];
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  if (c.deferred) parts.push(`${c.deferred} waiting`);
  if (c.failed) parts.push(`${c.failed} failed`);
  return `${strokes} · ${parts.join(', ')}${round}`;
}

async function post(run, action, body) {
  const r = await fetch(`/api/runs/${encodeURIComponent(run)}/${action}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body), credentials: 'same-origin',
  });
  const j = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

function say(el, text, bad) {
  el.textContent = text;
  el.className = bad ? 'msg bad' : 'msg ok';
}

// A message element that outlives its section's redraws (a "resumed" must not vanish when the run's state changes).
const kept = {};
const keptMsg = (key) => kept[key] || (kept[key] = h('span', { class: 'msg' }));

// ---- the runs ----

async function runsPage() {
  $crumb.textContent = '· runs';
  const draw = async () => {
    let j;
    try {
      const r = await fetch('/api/runs', { credentials: 'same-origin' });
      j = await r.json();
      $live.textContent = 'live'; $live.className = 'live on';
    } catch (e) { $live.textContent = 'offline'; $live.className = 'live'; return; }
    const rows = j.runs.map((r) => h('tr', {},
      h('td', { class: 'pic' }, r.files.target ? h('img', { class: 'thumb', src: r.files.target, alt: 'target' }) : ''),
      h('td', { class: 'what' }, h('a', { href: `/run/${encodeURIComponent(r.name)}`, class: 'runlink' }, r.name), ' ',
        badge(r.state, r.stale), ...waitingBadges(r), h('div', { class: 'muted small' }, r.reason || ''),
        h('div', { class: 'small' }, progressWords(r))),
      h('td', { class: 'num' }, canvasDe(r)),
      h('td', { class: 'num' }, `${fix(r.cost, 2)} ${r.currency || ''}`),
      h('td', { class: 'num' }, `heartbeat ${age(r.heartbeat_age_s)}`),
      h('td', {}, r.files.report ? h('a', { href: r.files.report }, 'report') : '')));
    $main.replaceChildren(h('h1', {}, 'Runs'), j.runs.length ? h('table', { class: 'runs' },
      h('thead', {}, h('tr', {}, ...['target', 'run', 'canvas', 'cost', 'heartbeat', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, rows)) : h('p', { class: 'muted' }, 'No runs here yet.'));
  };
  await draw();
  setInterval(draw, 3000);
}

// ---- one run ----

const sections = {};
// Redraws a section only when what it shows changed, so a form being filled in is left alone.
function section(id, key, build) {
  const s = sections[id];
  if (s && s.key === key) return;
  const el = build();
  el.id = id;
  if (s) s.el.replaceWith(el);
  sections[id] = { key, el };
}

function progress(r) {
  const st = r.status || {};
  const pct = r.strokes_total ? (100 * r.strokes_done) / r.strokes_total : 0;
  return h('section', { class: 'card' },
    h('div', { class: 'row' }, h('h1', {}, r.name), badge(r.state, r.stale), ...waitingBadges(r),
      r.files.report ? h('a', { class: 'button', href: r.files.report, target: '_blank' }, 'report') : ''),
    h('p', { class: 'muted' }, r.reason || ''),
    h('div', { class: 'bar' }, h('div', { style: `width:${pct.toFixed(1)}%` })),
    h('p', {}, r.state === 'running' && st.subtask ? `subtask ${st.subtask} · ` : '', progressWords(r),
      ` · canvas ${canvasDe(r)} · heartbeat ${typeof r.heartbeat_age_s === 'number' ? `${age(r.heartbeat_age_s)} ago` : 'none'}`));
}

function pictures(r) {
  const fig = (src, cap) => h('figure', {}, src ? h('img', { src, alt: cap, id: `img-${cap.split(' ')[0]}` }) : h('div', { class: 'noimg' }, 'not yet'), h('figcaption', {}, cap));
  // canvas-latest.png is written at every look (the blank canvas on): the canvas and its map cut to the target's rectangle.
  const v = r.files.canvas ? r.files.canvas.split('?v=')[1] : null;
  const api = `/api/runs/${encodeURIComponent(r.name)}`;
  return h('section', { class: 'card pics' },
    fig(v ? `${api}/canvas.png?v=${v}` : null, r.files.final ? 'canvas (final)' : 'canvas (latest look)'),
    fig(r.files.target, 'target'),
    fig(v && r.subtasks ? `${api}/errmap.png?v=${v}` : null, 'error map (ΔE00 a cell: blue 2, green 5, yellow 10, red 20)'));
}

// What a request would do, in words: the homing cycle has no path, and a motion names only the zones it has.
function requestWords(q) {
  const pt = (p) => `(${(p || []).map((x) => fix(x)).join(', ')})`;
  const speed = typeof q.speed_mm_s === 'number' ? ` at ${fix(q.speed_mm_s, 0)} mm/s` : '';
  if (q.kind === 'home') return `the homing cycle: the arm finds its home switches${speed}, the first motion of this process`;
  const zones = (q.zones || []).length ? `, through ${q.zones.join(', ')}` : '';
  const len = q.length_mm > 0 ? `, ${fix(q.length_mm, 0)} mm of path` : '';
  return `from ${pt(q.from_mm)} to ${pt(q.to_mm)} mm${speed}${len}${zones}`;
}

function approvals(r) {
  const list = r.requests || [];
  return h('section', { class: 'card' }, h('h2', {}, `Questions waiting (${list.length})`),
    list.length ? list.map((q) => {
      const msg = h('span', { class: 'msg' });
      const answer = (yes) => async (ev) => {
        ev.target.disabled = true;
        try { await post(r.name, 'approve', { id: q.id, answer: yes ? 'yes' : 'no' }); say(msg, yes ? 'approved' : 'denied'); }
        catch (e) { say(msg, e.message, true); ev.target.disabled = false; }
      };
      return h('div', { class: 'request', id: `req-${q.id}` },
        q.preview_url ? h('img', { class: 'preview', src: q.preview_url, alt: `preview of ${q.id}` }) : h('div', { class: 'noimg' }, 'no preview'),
        h('div', {},
          h('h3', {}, `${q.id}: ${q.kind}${q.action_id !== undefined ? ` id ${q.action_id}` : ''}`),
          h('p', {}, requestWords(q)),
          h('ul', {}, (q.why || []).map((w) => h('li', {}, h('b', {}, w.reason), `: ${w.detail}`))),
          r.read_only ? '' : h('div', { class: 'row' },
            h('button', { class: 'yes', id: `approve-${q.id}`, onclick: answer(true) }, 'Approve'),
            h('button', { class: 'no', id: `deny-${q.id}`, onclick: answer(false) }, 'Deny'), msg)));
    }) : h('p', { class: 'muted' }, 'Nothing waits for an answer.'));
}

function grantForm(r) {
  const kinds = ['move', 'stroke', 'dip', 'dispense', 'stir', 'wipe', 'wash', 'park', 'jog', 'home'];
  const zones = ['canvas', 'palette', 'well', 'cell', 'water', 'wipe', 'travel'];
  const msg = keptMsg('grant');
  const boxes = (name, list, on) => h('div', { class: 'boxes' }, list.map((k) => h('label', {}, h('input', { type: 'checkbox', name, value: k, checked: on.includes(k) }), k)));
  const form = h('form', { class: 'grant', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    try {
      const g = await post(r.name, 'grant', { kinds: f.getAll('kind').join(','), zones: f.getAll('zone').join(','), max_speed: f.get('max_speed'), for: f.get('for') });
      say(msg, `grant ${g.id} given`);
    } catch (e) { say(msg, e.message, true); }
  } },
  h('div', {}, 'kinds', boxes('kind', kinds, ['stir'])), h('div', {}, 'zones where the tool goes down', boxes('zone', zones, ['palette'])),
  h('label', {}, 'up to ', h('input', { name: 'max_speed', value: '150', size: 5 }), ' mm/s'),
  h('label', {}, ' for ', h('input', { name: 'for', value: '30m', size: 6 }), ' (15m, 2h, 90s)'),
  h('button', { type: 'submit' }, 'Grant'), msg);
  const grants = (r.grants || []).map((g) => {
    const left = g.for_s - (Date.now() - g.issued_wall_ms) / 1000;
    const what = g.egress ? `egress ${g.egress} for the planner, ` :
      `${(g.kinds || []).join(',')} in ${(g.zones || []).join(',')} up to ${g.max_speed_mm_s} mm/s, `;
    const revoked = g.state === 'revoked';
    return h('li', {}, `${g.id}: ${what}`,
      revoked ? 'revoked' : left > 0 ? `${age(left)} left` : 'expired', ` (by ${g.by}) `,
      !r.read_only && !revoked && left > 0 ? h('button', { class: 'small', onclick: async () => { try { await post(r.name, 'revoke', { id: g.id }); } catch (e) { alert(e.message); } } }, 'revoke') : '');
  });
  return h('section', { class: 'card' }, h('h2', {}, 'Grants'), grants.length ? h('ul', {}, grants) : h('p', { class: 'muted' }, 'No grants.'), r.read_only ? '' : form);
}

function pausedAnswers(r) {
  const st = r.status || {};
  const paused = ['paused', 'braked'].includes(r.state) || r.stale;
  const esc = (r.colours || []).filter((c) => c.escalated && !c.accepted);
  const wells = st.wells || [];
  const msg = keptMsg('answers');
  const going = r.resume_pid > 0;
  const form = h('form', { onsubmit: async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const subs = esc.filter((c) => f.get(`sub-${c.name}`)).map((c) => `${c.name}=${f.get(`sub-${c.name}`)}`);
    try {
      const j = await post(r.name, 'resume', { accept_mix: f.getAll('accept').join(','), refilled: f.getAll('refilled').join(','), substitute: subs, overrule_review: f.get('overrule_review') === 'yes' });
      say(msg, j.ended ? `resume ended (exit ${j.exit})` : `resumed (pid ${j.pid})`);
    } catch (e) { say(msg, e.message, true); }
  } },
  esc.length ? h('table', {}, h('tr', {}, h('th', {}, 'colour: wanted, nearest mixed'), h('th', { class: 'num' }, 'ΔE00'), h('th', {}, 'accept'), h('th', {}, 'or substitute')),
    esc.map((c) => h('tr', {}, h('td', {}, `${c.name} `, h('span', { class: 'sw', style: `background:${c.want}` }), ' ', h('span', { class: 'sw', style: `background:${c.measured || '#000'}` })),
      h('td', { class: 'num' }, de(c.measured_de00)), h('td', {}, h('input', { type: 'checkbox', name: 'accept', value: c.name, 'aria-label': `accept ${c.name}` })),
      h('td', {}, h('input', { name: `sub-${c.name}`, placeholder: 'lab:80,0,10 or c1', size: 12 }))))) : h('p', { class: 'muted' }, 'No mix waits for the operator.'),
  st.review_pending ? h('div', { class: 'review', id: 'review-pending' },
    h('p', {}, h('b', {}, `The second judge disagrees with the ${st.review_pending.point} verdict: `), st.review_pending.why),
    h('label', {}, h('input', { type: 'checkbox', name: 'overrule_review', value: 'yes', id: 'overrule-review' }),
      'I looked: the run\'s verdict stands (unticked, the run looks again once the cause is fixed)')) : '',
  h('div', { class: 'boxes' }, 'wells refilled: ', wells.map((w) => h('label', { title: w.paint }, h('input', { type: 'checkbox', name: 'refilled', value: w.well }), `${w.well} ${fix(w.left_ml, 1)}/${w.capacity_ml} ml`))),
  h('button', { type: 'submit', id: 'resume', disabled: going }, 'Resume'));
  const hold = h('button', { id: 'hold', onclick: async () => { try { await post(r.name, 'hold', {}); say(msg, 'held: the run pauses'); } catch (e) { say(msg, e.message, true); } } }, 'Hold');
  // The message is the section's, not the form's: what an answer did stays when the form goes (the run resumed).
  return h('section', { class: 'card' }, h('h2', {}, 'Answers and control'),
    r.read_only ? h('p', { class: 'muted' }, 'Read-only console.') : [paused && !going ? form : h('p', { class: 'muted' }, going ? `painting from this console (pid ${r.resume_pid})` : 'The run is not paused.'), going ? hold : '', h('div', {}, msg)]);
}

// Tables that fit a phone: columns merged, the long ones (notes) only on a wide screen (style.css: .wide).
function subtasks(r) {
  return h('section', { class: 'card scroll' }, h('h2', {}, 'Subtasks'), h('table', { class: 'small' },
    h('tr', {}, h('th', {}, ''), h('th', {}, 'what'), h('th', {}, 'status'), h('th', { class: 'num' }, 'ΔE00'), h('th', { class: 'wide' }, 'note')),
    (r.subtask_table || []).map((s) => h('tr', { class: s.status }, h('td', {}, s.name),
      h('td', {}, `${s.type}${s.colour ? ` ${s.colour}` : ''}${s.strokes ? `, ${s.strokes} strokes` : ''}`),
      h('td', {}, s.status, s.attempts > 1 ? ` (${s.attempts} attempts)` : ''), h('td', { class: 'num' }, de(s.verdict_de00)),
      h('td', { class: 'wide' }, s.note)))));
}

function colourState(c) {
  if (c.accepted_within) return 'accepted by the machine\'s rule';
  if (c.escalated) return c.accepted ? 'accepted' : 'waits for the operator';
  if (c.accepted) return 'accepted';
  return c.verified ? 'verified' : '';
}

function colours(r) {
  const sw = (bg, title) => (bg ? h('span', { class: 'sw', style: `background:${bg}`, title }) : '–');
  return h('section', { class: 'card' }, h('h2', {}, 'Colours and their mixes'), h('table', { class: 'small' },
    h('tr', {}, h('th', {}, 'colour: wanted, mixed'), h('th', { class: 'num' }, 'ΔE00'), h('th', { class: 'num' }, 'mixes'),
      h('th', { class: 'num' }, 'paint'), h('th', {}, '')),
    (r.colours || []).map((c) => h('tr', {}, h('td', {}, `${c.name} `, sw(c.want, 'wanted'), ' ', sw(c.measured, 'mixed'), c.cell ? h('span', { class: 'muted' }, ` ${c.cell}`) : ''),
      h('td', { class: 'num' }, de(c.measured_de00)), h('td', { class: 'num' }, `${c.mixes ?? 0}/${c.attempts ?? 0}`),
      h('td', { class: 'num' }, `${fix(c.paint_ml, 1)} ml`), h('td', {}, colourState(c))))));
}

function cost(r) {
  const c = (r.status || {}).cost || {};
  const e = (r.estimate || {}).expected || {};
  const p = c.priced || {}, ep = e.priced || {};
  const line = (name, now, exp, unit, d) => h('tr', {}, h('td', {}, name), h('td', { class: 'num' }, `${fix(now, d)} ${unit}`), h('td', { class: 'num' }, exp !== undefined ? `${fix(exp, d)} ${unit}` : '–'));
  return h('section', { class: 'card' }, h('h2', {}, 'Cost against the estimate'), h('table', { class: 'small' },
    h('tr', {}, h('th', {}, ''), h('th', {}, 'so far'), h('th', {}, 'estimated')),
    line('arm time', (c.arm_s || 0) / 60, e.arm_s !== undefined ? e.arm_s / 60 : undefined, 'min', 0),
    line('verifications', c.verifications, e.verifications, '', 0),
    line('paint', c.paint_ml, e.paint_ml, 'ml', 1),
    line('total', p.total, ep.total, c.currency || '', 2)));
}

// The journal's events in words; each line opens to the raw event.
const n2 = (x) => fix(x, 2);
const said = {
  run_start: (d) => `run started: ${d.subtasks} subtasks, ${d.strokes} strokes, ${d.colours} colours (predicted ΔE00 ${n2(d.predicted_mean_de00)})`,
  subtask_start: (d) => `${d.type}${d.colour ? ` ${d.colour}` : ''} started${d.round ? ` (correction round ${d.round})` : ''}`,
  subtask_end: (d) => `${d.status}${typeof d.verdict_de00 === 'number' && d.verdict_de00 >= 0 ? `, ΔE00 ${n2(d.verdict_de00)}` : ''}`,
  mix_measured: (d) => `cell ${d.cell} measured: ΔE00 ${n2(d.de00)} against ${n2(d.tolerance_de00)}, ${d.verdict}`,
  mix_decision: (d) => `mix: ${d.action}${d.dispense ? ` ${Object.entries(d.dispense).map(([k, v]) => `${v} ${k}`).join(', ')}` : ''}`,
  mix_verified: () => 'mix verified',
  mix_escalated: (d) => `no mix within the tolerance (best ΔE00 ${n2(d.measured_de00)}): the colour waits for the operator`,
  mix_accepted: (d) => `the operator accepted ${d}`,
  mix_accepted_nearest: (d) => `the nearest mix accepted (--accept-nearest), ΔE00 ${n2(d.measured_de00)}`,
  mix_accepted_within: (d) => `${d.colour} accepted by the machine's rule (ΔE00 ${n2(d.de00)} within ${d.accept_within_de00})`,
  verified: (d) => `paint batch verified: ${d.verdict} (ΔE00 ${n2(d.observed_vs_predicted_de00)} from the prediction; canvas ${n2(d.canvas_mean_de00)})`,
  checkpoint: (d) => `checkpoint: canvas ΔE00 ${n2(d.canvas_mean_de00)} (p95 ${n2(d.canvas_p95_de00)}), ${d.verdict}`,
  blank_canvas: () => 'looked at the blank canvas',
  finished: (d) => `finished: canvas ΔE00 ${n2(d.mean_de00)} (p95 ${n2(d.p95_de00)})${d.verified ? ', verified' : ''}`,
  waiting_to_dry: (d) => `waiting ${fix(d.wait_s / 60, 0)} min for ${d.wet_batches} wet batches to dry`,
  decision: (d) => `gate: ${(d.action || {}).type} ${(d.decision || {}).decision}${(d.decision || {}).reason && d.decision.reason !== 'ok' ? ` (${d.decision.reason})` : ''}`,
  executed: (d) => `${d.kind} ${d.result}`,
  request: (d) => `asks the operator: ${d.request} (${((d.decision || {}).message) || ''})`,
  deferred: (d) => (typeof d === 'string' ? d : `${d.request} waits for an answer`),
  answer: (d) => `${d.request} answered ${d.answer} by ${d.by}`,
  brake: (d) => `brake ${d.brake}: ${d.reason}`,
  camera_error: (d) => `camera: ${d}`,
  arm_error: (d) => `arm: ${typeof d === 'string' ? d : JSON.stringify(d)}`,
  resume: (d) => `resumed (was ${d.was})${d.by ? ` by ${d.by}` : ''}`,
  process_end: (d) => `process ended: ${d.state}${d.reason ? `: ${d.reason}` : ''}`,
  correction_planned: (d) => `correction round ${d.round} planned: ${d.strokes} strokes (predicted ΔE00 ${n2(d.predicted_mean_de00)})`,
  refilled: (d) => `well ${d.well} refilled to ${fix(d.now_ml, 1)} ml`,
  gate_open: (d) => `gate opened (${d.mode})`,
};
function words(e) {
  const f = said[e.event];
  const d = e.data;
  try { if (f) return f(d ?? {}); } catch (err) { /* an event of another shape: said plainly below */ }
  if (typeof d === 'string') return `${e.event.replace(/_/g, ' ')}: ${d}`;
  return e.event.replace(/_/g, ' ');
}

function journal(r) {
  return h('section', { class: 'card scroll' }, h('h2', {}, 'Journal (latest)'), h('div', { class: 'events' },
    (r.journal || []).slice().reverse().map((e) => h('details', { class: 'ev' },
      h('summary', {}, h('span', { class: 'muted small' }, new Date(e.wall_ms).toLocaleTimeString(), ' ', e.subtask || ''), ' ', words(e)),
      h('pre', { class: 'mono small' }, JSON.stringify(e, null, 1))))));
}

// Applies a patch as serve_events.c makes it: JSON merge patch (RFC 7396), an array's changed items as {"@len", "INDEX": item}.
function merge(target, patch) {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  if (Array.isArray(target) && '@len' in patch) {
    const out = target.slice(0, patch['@len']);
    for (const [k, v] of Object.entries(patch)) if (k !== '@len') out[Number(k)] = v;
    return out;
  }
  const out = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v);
  }
  return out;
}

function runPage(name) {
  $crumb.textContent = `· ${name}`;
  const grid = h('div', { class: 'grid' });
  const ids = ['progress', 'pictures', 'approvals', 'answers', 'grants', 'cost', 'colours', 'subtasks', 'journal'];
  for (const id of ids) { const p = h('div', { id }); grid.append(p); sections[id] = { key: null, el: p }; }
  $main.replaceChildren(grid);
  const draw = (r) => {
    section('progress', JSON.stringify([r.state, r.reason, r.round, r.strokes_done, r.subtask_counts, r.mean_de00, r.p95_de00,
      typeof r.heartbeat_age_s === 'number' ? Math.round(r.heartbeat_age_s) : null, r.files.report, r.waiting, r.subtasks_waiting, r.colours_waiting]), () => progress(r));
    section('pictures', JSON.stringify(r.files), () => pictures(r));
    section('approvals', JSON.stringify([(r.requests || []).map((q) => q.id), r.read_only]), () => approvals(r));
    section('answers', JSON.stringify([r.state, r.stale, r.resume_pid, (r.colours || []).map((c) => [c.escalated, c.accepted]), r.read_only, (r.status || {}).review_pending]), () => pausedAnswers(r));
    section('grants', JSON.stringify([r.grants, r.read_only]), () => grantForm(r));
    section('cost', JSON.stringify([(r.status || {}).cost, !!r.estimate]), () => cost(r));
    section('colours', JSON.stringify(r.colours), () => colours(r));
    section('subtasks', JSON.stringify(r.subtask_table), () => subtasks(r));
    section('journal', JSON.stringify((r.journal || []).map((e) => e.seq)), () => journal(r));
    document.body.dataset.state = r.state;
  };
  // The stream sends the run once, then what changed (serve_events.c): merged here into the run as the client has it.
  let run = null;
  const live = () => { $live.textContent = 'live'; $live.className = 'live on'; };
  const es = new EventSource(`/api/runs/${encodeURIComponent(name)}/events`);
  es.addEventListener('run', (ev) => { live(); run = JSON.parse(ev.data); draw(run); });
  es.addEventListener('patch', (ev) => {
    if (!run) return;
    live();
    const p = JSON.parse(ev.data);
    const add = p.journal_add || [];
    delete p.journal_add;
    run = merge(run, p);
    run.journal = (run.journal || []).concat(add).slice(-40);
    draw(run);
  });
  es.onerror = () => { $live.textContent = 'reconnecting'; $live.className = 'live'; };
}

const m = location.pathname.match(/^\/run\/([^/]+)$/);
if (m) runPage(decodeURIComponent(m[1])); else runsPage();
