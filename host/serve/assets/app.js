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
const de = (x, d = 2) => (typeof x === 'number' && x >= 0 ? x.toFixed(d) : '–'); // -1: not measured yet
const age = (s) => (s < 90 ? `${fix(s, 0)} s` : s < 5400 ? `${fix(s / 60, 0)} min` : `${fix(s / 3600, 1)} h`);
const badge = (state, stale) => h('span', { class: `badge ${stale ? 'stale' : state}` }, stale ? 'STALE' : state);

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
      h('td', {}, r.files.target ? h('img', { class: 'thumb', src: r.files.target, alt: 'target' }) : ''),
      h('td', {}, h('a', { href: `/run/${encodeURIComponent(r.name)}`, class: 'runlink' }, r.name),
        r.waiting ? h('span', { class: 'badge waiting' }, `${r.waiting} waiting`) : ''),
      h('td', {}, badge(r.state, r.stale), h('div', { class: 'muted small' }, r.reason || '')),
      h('td', { class: 'num' }, `${r.subtasks_done ?? 0}/${r.subtasks ?? 0}`),
      h('td', { class: 'num' }, fix(r.mean_de00, 2), h('span', { class: 'muted' }, ` p95 ${fix(r.p95_de00, 1)}`)),
      h('td', { class: 'num' }, `${fix(r.cost, 2)} ${r.currency || ''}`),
      h('td', { class: 'num' }, r.heartbeat_age_s !== undefined ? age(r.heartbeat_age_s) : '–'),
      h('td', {}, r.files.report ? h('a', { href: r.files.report }, 'report') : '')));
    $main.replaceChildren(h('h1', {}, 'Runs'), j.runs.length ? h('table', { class: 'runs' },
      h('thead', {}, h('tr', {}, ...['target', 'run', 'state', 'subtasks', 'canvas ΔE00', 'cost', 'heartbeat', ''].map((t) => h('th', {}, t)))),
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
    h('div', { class: 'row' }, h('h1', {}, r.name), badge(r.state, r.stale),
      r.files.report ? h('a', { class: 'button', href: r.files.report, target: '_blank' }, 'report') : ''),
    h('p', { class: 'muted' }, r.reason || ''),
    h('div', { class: 'bar' }, h('div', { style: `width:${pct.toFixed(1)}%` })),
    h('p', {}, `subtask ${st.subtask || '–'} · ${r.subtasks_done}/${r.subtasks} subtasks · `,
      `${r.strokes_done}/${r.strokes_total} strokes · canvas ΔE00 ${fix(r.mean_de00, 2)} (p95 ${fix(r.p95_de00, 1)}) · `,
      `heartbeat ${age(r.heartbeat_age_s || 0)} ago`));
}

function pictures(r) {
  const fig = (src, cap) => h('figure', {}, src ? h('img', { src, alt: cap, id: `img-${cap.split(' ')[0]}` }) : h('div', { class: 'noimg' }, 'not yet'), h('figcaption', {}, cap));
  const v = r.files.canvas ? r.files.canvas.split('?v=')[1] : null;
  return h('section', { class: 'card pics' },
    fig(r.files.final || r.files.canvas, r.files.final ? 'canvas (final)' : 'canvas (latest checkpoint)'),
    fig(r.files.target, 'target'),
    fig(v ? `/api/runs/${encodeURIComponent(r.name)}/errmap.png?v=${v}` : null, 'error map (ΔE00 a cell: blue 2, green 5, yellow 10, red 20)'));
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
          h('p', {}, `from (${(q.from_mm || []).map((x) => fix(x)).join(', ')}) to (${(q.to_mm || []).map((x) => fix(x)).join(', ')}) mm at ${q.speed_mm_s} mm/s, zones ${(q.zones || []).join(', ')}`),
          h('ul', {}, (q.why || []).map((w) => h('li', {}, h('b', {}, w.reason), `: ${w.detail}`))),
          r.read_only ? '' : h('div', { class: 'row' },
            h('button', { class: 'yes', id: `approve-${q.id}`, onclick: answer(true) }, 'Approve'),
            h('button', { class: 'no', id: `deny-${q.id}`, onclick: answer(false) }, 'Deny'), msg)));
    }) : h('p', { class: 'muted' }, 'Nothing waits for an answer.'));
}

function grantForm(r) {
  const kinds = ['move', 'stroke', 'dip', 'dispense', 'stir', 'wipe', 'wash', 'park', 'jog', 'home'];
  const zones = ['canvas', 'palette', 'well', 'cell', 'water', 'wipe', 'travel'];
  const msg = h('span', { class: 'msg' });
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
  const msg = h('span', { class: 'msg' });
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
  esc.length ? h('table', {}, h('tr', {}, h('th', {}, 'colour'), h('th', {}, 'wanted'), h('th', {}, 'nearest mixed'), h('th', {}, 'ΔE00'), h('th', {}, 'accept'), h('th', {}, 'or substitute')),
    esc.map((c) => h('tr', {}, h('td', {}, c.name), h('td', {}, h('span', { class: 'sw', style: `background:${c.want}` })), h('td', {}, h('span', { class: 'sw', style: `background:${c.measured || '#000'}` })),
      h('td', { class: 'num' }, de(c.measured_de00)), h('td', {}, h('input', { type: 'checkbox', name: 'accept', value: c.name })),
      h('td', {}, h('input', { name: `sub-${c.name}`, placeholder: 'lab:80,0,10 or c1', size: 16 }))))) : h('p', { class: 'muted' }, 'No mix waits for the operator.'),
  st.review_pending ? h('div', { class: 'review', id: 'review-pending' },
    h('p', {}, h('b', {}, `The second judge disagrees with the ${st.review_pending.point} verdict: `), st.review_pending.why),
    h('label', {}, h('input', { type: 'checkbox', name: 'overrule_review', value: 'yes', id: 'overrule-review' }),
      'I looked: the run\'s verdict stands (unticked, the run looks again once the cause is fixed)')) : '',
  h('div', { class: 'boxes' }, 'wells refilled: ', wells.map((w) => h('label', { title: w.paint }, h('input', { type: 'checkbox', name: 'refilled', value: w.well }), `${w.well} ${fix(w.left_ml, 1)}/${w.capacity_ml} ml`))),
  h('button', { type: 'submit', id: 'resume', disabled: going }, 'Resume'), msg);
  const hold = h('button', { id: 'hold', onclick: async () => { try { await post(r.name, 'hold', {}); say(msg, 'held: the run pauses'); } catch (e) { say(msg, e.message, true); } } }, 'Hold');
  return h('section', { class: 'card' }, h('h2', {}, 'Answers and control'),
    r.read_only ? h('p', { class: 'muted' }, 'Read-only console.') : [paused && !going ? form : h('p', { class: 'muted' }, going ? `painting from this console (pid ${r.resume_pid})` : 'The run is not paused.'), going ? hold : '']);
}

function subtasks(r) {
  return h('section', { class: 'card scroll' }, h('h2', {}, 'Subtasks'), h('table', { class: 'small' },
    h('tr', {}, ...['', 'type', 'colour', 'strokes', 'status', 'attempts', 'verdict ΔE00', 'note'].map((t) => h('th', {}, t))),
    (r.subtask_table || []).map((s) => h('tr', { class: s.status }, h('td', {}, s.name), h('td', {}, s.type), h('td', {}, s.colour), h('td', { class: 'num' }, s.strokes),
      h('td', {}, s.status), h('td', { class: 'num' }, s.attempts), h('td', { class: 'num' }, de(s.verdict_de00)), h('td', {}, s.note)))));
}

function colours(r) {
  return h('section', { class: 'card' }, h('h2', {}, 'Colours and their mixes'), h('table', { class: 'small' },
    h('tr', {}, ...['colour', 'cell', 'wanted', 'mixed', 'ΔE00', 'mixes', 'attempts', 'paint', ''].map((t) => h('th', {}, t))),
    (r.colours || []).map((c) => h('tr', {}, h('td', {}, c.name), h('td', {}, c.cell), h('td', {}, h('span', { class: 'sw', style: `background:${c.want}` })),
      h('td', {}, c.measured ? h('span', { class: 'sw', style: `background:${c.measured}` }) : '–'), h('td', { class: 'num' }, de(c.measured_de00)),
      h('td', { class: 'num' }, c.mixes), h('td', { class: 'num' }, c.attempts), h('td', { class: 'num' }, `${fix(c.paint_ml, 1)} ml`),
      h('td', {}, c.escalated ? (c.accepted ? 'accepted' : 'waits for the operator') : c.verified ? 'verified' : '')))));
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

function journal(r) {
  return h('section', { class: 'card scroll' }, h('h2', {}, 'Journal (latest)'), h('table', { class: 'small mono' },
    (r.journal || []).slice().reverse().map((e) => h('tr', {}, h('td', {}, new Date(e.wall_ms).toLocaleTimeString()), h('td', {}, e.src), h('td', {}, e.subtask || ''), h('td', {}, e.event),
      h('td', { class: 'data' }, JSON.stringify(e.data ?? '').slice(0, 160))))));
}

function runPage(name) {
  $crumb.textContent = `· ${name}`;
  const grid = h('div', { class: 'grid' });
  const ids = ['progress', 'pictures', 'approvals', 'answers', 'grants', 'cost', 'colours', 'subtasks', 'journal'];
  for (const id of ids) { const p = h('div', { id }); grid.append(p); sections[id] = { key: null, el: p }; }
  $main.replaceChildren(grid);
  const draw = (r) => {
    section('progress', JSON.stringify([r.state, r.reason, r.strokes_done, r.subtasks_done, r.mean_de00, Math.round(r.heartbeat_age_s || 0), r.files.report]), () => progress(r));
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
  const es = new EventSource(`/api/runs/${encodeURIComponent(name)}/events`);
  es.addEventListener('run', (ev) => { $live.textContent = 'live'; $live.className = 'live on'; draw(JSON.parse(ev.data)); });
  es.onerror = () => { $live.textContent = 'reconnecting'; $live.className = 'live'; };
}

const m = location.pathname.match(/^\/run\/([^/]+)$/);
if (m) runPage(decodeURIComponent(m[1])); else runsPage();
