// fashiond playground: a form generated from the API's own OpenAPI
// document (openapi.json), submitted to POST v1/run, followed through the
// status event stream (or by polling), with the outputs and their notes.
// Plain browser JavaScript, no build step, nothing from other origins.
'use strict';

(() => {
  // sessionStorage keys: the key stays in this tab only.
  const KEY_STORE = 'fashiond.apiKey';
  const MODEL_STORE = 'fashiond.model';
  // Polling interval when the event stream is not available.
  const POLL_MS = 1000;
  // Patterns the document gives image strings (api/openapi.go).
  const DATA_URI_PATTERN = '^[dD][aA][tT][aA]:';
  const URL_PATTERN = '^[hH][tT][tT][pP][sS]?://';
  // Saved-model id fields (model-create) offer the caller's studio.
  const ID_PATTERN = '^[A-Za-z0-9_-]*$';
  // Texts this long or longer get a multi-line box.
  const TEXTAREA_FROM = 500;
  // Image types a file picker offers (the API detects the type from bytes).
  const IMAGE_ACCEPT = 'image/jpeg,image/png,image/webp';
  const SHOWN_DATA_CHARS = 40;

  const $ = (id) => document.getElementById(id);
  let doc = null; // the OpenAPI document
  let form = null; // the root widget of the current model's inputs
  let watch = null; // AbortController of the job being followed
  let jobID = '';
  let shownOutputs = '';
  const pending = new Set(); // file reads not finished yet
  let uid = 0;

  // el builds an element: el('div', {class: 'x'}, 'text', child...).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === undefined || v === null) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined && c !== '') e.append(c);
    return e;
  }

  function apiKey() { return $('api-key').value.trim(); }

  function authHeaders(extra) {
    return Object.assign({ Authorization: 'Bearer ' + apiKey() }, extra || {});
  }

  // readBody returns the JSON body of a response, or {error: text}.
  async function readBody(res) {
    const text = await res.text();
    try { return JSON.parse(text); } catch { return { error: text || res.statusText }; }
  }

  // ---- schema helpers ----

  function deref(s) {
    let guard = 0;
    while (s && s.$ref && guard++ < 16) {
      const parts = s.$ref.replace(/^#\//, '').split('/');
      s = parts.reduce((o, p) => (o ? o[p] : undefined), doc);
    }
    return s || {};
  }

  function typeHas(s, t) {
    return s.type === t || (Array.isArray(s.type) && s.type.includes(t));
  }

  function enumValues(s) {
    return (s.enum || []).filter((v) => v !== null && v !== '');
  }

  function imageBranches(s) {
    const branches = (s.anyOf || []).map(deref);
    if (!branches.some((b) => b.pattern === DATA_URI_PATTERN)) return null;
    return { url: branches.some((b) => b.pattern === URL_PATTERN) };
  }

  function describe(v) { return v === '' ? '""' : JSON.stringify(v); }

  // helpText is a field's description with its default and limits.
  function helpText(s) {
    const parts = [];
    if (s.description) parts.push(s.description);
    if (s.default !== undefined) parts.push('default ' + describe(s.default));
    if (s.minimum !== undefined && s.maximum !== undefined && s.maximum < 2147483647 && !s.enum) {
      parts.push(`${s.minimum} to ${s.maximum}`);
    }
    if (s.maxLength !== undefined && typeHas(s, 'string') && !s.anyOf) parts.push(`at most ${s.maxLength} characters`);
    if (s.minItems !== undefined || s.maxItems !== undefined) {
      parts.push(`${s.minItems || 0} to ${s.maxItems ?? 'any number of'} items`);
    }
    return parts.join(' · ');
  }

  // orderedProps: required fields in the document's order, then the rest.
  function orderedProps(s) {
    const props = Object.keys(s.properties || {});
    const req = (s.required || []).filter((k) => props.includes(k));
    return req.concat(props.filter((k) => !req.includes(k)).sort());
  }

  // ---- widgets: {el, get()}; get() is undefined for "not given" ----

  function control(s, required, id) {
    s = deref(s);
    if (s.oneOf) return oneOfWidget(s);
    if (imageBranches(s)) return imageWidget(s, id);
    if (typeHas(s, 'array')) {
      const items = deref(s.items);
      return items.enum ? checkboxesWidget(s, items, required) : listWidget(s, items, required);
    }
    if (s.enum) return enumValues(s).length ? selectWidget(s, required, id) : null;
    if (typeHas(s, 'object') && s.properties) return objectWidget(s);
    if (typeHas(s, 'boolean')) return boolWidget(s, id);
    if (typeHas(s, 'integer') || typeHas(s, 'number')) return numberWidget(s, id);
    if (typeHas(s, 'string')) return textWidget(s, id);
    return jsonWidget(id);
  }

  // field wraps a control with its label, help and error line; data-key
  // lets an API error's field path find it.
  function field(key, s, required) {
    const id = 'f' + (++uid);
    const c = control(s, required, id);
    if (!c) return null; // not applicable (e.g. "Only with type generate.")
    const label = el('label', { for: id }, key, required ? el('span', { class: 'req', title: 'required' }, ' *') : '');
    const wrap = el('div', { class: 'field', 'data-key': key }, label, c.el,
      el('div', { class: 'help' }, helpText(deref(s))), el('div', { class: 'field-error' }));
    return { el: wrap, get: c.get };
  }

  function objectWidget(s, skip) {
    const box = el('div', { class: 'object' });
    const fields = [];
    for (const k of orderedProps(s)) {
      if (k === skip) continue;
      const f = field(k, s.properties[k], (s.required || []).includes(k));
      if (f) { fields.push([k, f]); box.append(f.el); }
    }
    return {
      el: box,
      get() {
        const out = {};
        for (const [k, f] of fields) {
          const v = f.get();
          if (v !== undefined) out[k] = v;
        }
        return out;
      },
    };
  }

  // oneOfWidget: objects told apart by a property with a const value in
  // each variant (model-create's type, a pose's type).
  function oneOfWidget(s) {
    const variants = s.oneOf.map(deref);
    const disc = Object.keys(variants[0].properties || {}).find((k) =>
      variants.every((v) => v.properties && v.properties[k] && v.properties[k].const !== undefined));
    const id = 'f' + (++uid);
    const sel = el('select', { id }, ...variants.map((v, i) => el('option', { value: i }, v.properties[disc].const)));
    const body = el('div', { class: 'variant' });
    let current = null;
    const show = () => {
      current = objectWidget(variants[Number(sel.value)], disc);
      body.replaceChildren(current.el);
    };
    sel.addEventListener('change', show);
    show();
    const discField = el('div', { class: 'field', 'data-key': disc },
      el('label', { for: id }, disc, el('span', { class: 'req', title: 'required' }, ' *')), sel,
      el('div', { class: 'help' }, variants[0].properties[disc].description || ''), el('div', { class: 'field-error' }));
    return {
      el: el('div', { class: 'oneof' }, discField, body),
      get() {
        return Object.assign({ [disc]: variants[Number(sel.value)].properties[disc].const }, current.get());
      },
    };
  }

  function selectWidget(s, required, id) {
    const values = enumValues(s);
    const sel = el('select', { id });
    if (!required && s.default === undefined) sel.append(el('option', { value: '' }, '— not given —'));
    values.forEach((v, i) => sel.append(el('option', { value: String(i + 1), selected: v === s.default }, String(v))));
    return { el: sel, get: () => (sel.value === '' ? undefined : values[Number(sel.value) - 1]) };
  }

  function boolWidget(s, id) {
    const box = el('input', { id, type: 'checkbox', checked: s.default === true });
    return { el: box, get: () => box.checked };
  }

  function numberWidget(s, id) {
    const max = s.maximum !== undefined && s.maximum < 2147483647 ? s.maximum : undefined;
    const input = el('input', {
      id, type: 'number', step: typeHas(s, 'integer') ? 1 : 'any',
      min: s.minimum, max, value: s.default !== undefined ? s.default : undefined,
    });
    return {
      el: input,
      get() {
        const t = input.value.trim();
        if (t === '') return undefined;
        const n = Number(t);
        return Number.isNaN(n) ? t : n; // the API names what is wrong
      },
    };
  }

  function textWidget(s, id) {
    const long = (s.maxLength || 0) >= TEXTAREA_FROM;
    const attrs = { id, maxlength: s.maxLength, spellcheck: long };
    if (s.pattern === ID_PATTERN) attrs.list = 'saved-models';
    const input = long ? el('textarea', Object.assign({ rows: 2 }, attrs)) : el('input', Object.assign({ type: 'text' }, attrs));
    if (typeof s.default === 'string') input.value = s.default;
    return { el: input, get: () => (input.value === '' ? undefined : input.value) };
  }

  function jsonWidget(id) {
    const input = el('input', { id, type: 'text', placeholder: 'a JSON value' });
    return {
      el: input,
      get() {
        if (input.value.trim() === '') return undefined;
        try { return JSON.parse(input.value); } catch { return input.value; }
      },
    };
  }

  // checkboxesWidget: an array of distinct enum values (angleIds).
  function checkboxesWidget(s, items, required) {
    const values = enumValues(items);
    const boxes = values.map((v) => el('input', { type: 'checkbox', value: v }));
    const box = el('div', { class: 'choices' },
      ...values.map((v, i) => el('label', { class: 'choice' }, boxes[i], ' ' + v)));
    return {
      el: box,
      get() {
        const picked = values.filter((v, i) => boxes[i].checked);
        return picked.length || required ? picked : undefined;
      },
    };
  }

  // listWidget: an array of objects (poses), minItems to maxItems of them.
  function listWidget(s, items, required) {
    const min = s.minItems || 0;
    const max = s.maxItems ?? Infinity;
    const list = el('div', { class: 'list' });
    const rows = [];
    const add = el('button', { type: 'button', class: 'small' }, 'Add');
    const renumber = () => {
      rows.forEach((r, i) => {
        r.el.dataset.index = i;
        r.el.querySelector('.item-title').textContent = `#${i + 1}`;
        r.remove.disabled = rows.length <= min;
      });
      add.disabled = rows.length >= max;
    };
    const addRow = () => {
      const c = control(items, true, 'f' + (++uid));
      const remove = el('button', { type: 'button', class: 'small' }, 'Remove');
      const row = { c, remove, el: el('div', { class: 'item' }, el('div', { class: 'item-head' }, el('span', { class: 'item-title' }), remove), c.el) };
      remove.addEventListener('click', () => { rows.splice(rows.indexOf(row), 1); row.el.remove(); renumber(); });
      rows.push(row);
      list.append(row.el);
      renumber();
    };
    add.addEventListener('click', addRow);
    for (let i = 0; i < Math.max(min, 1); i++) addRow();
    return {
      el: el('div', {}, list, add),
      get: () => (rows.length || required ? rows.map((r) => r.c.get()) : undefined),
    };
  }

  // imageWidget: a file read as a data URI, or (where the field takes one)
  // an http(s) URL.
  function imageWidget(s, id) {
    const takesURL = imageBranches(s).url;
    const file = el('input', { id, type: 'file', accept: IMAGE_ACCEPT });
    const url = takesURL ? el('input', { type: 'url', class: 'url', placeholder: 'or an image URL (https://…)', maxlength: 8192 }) : null;
    const preview = el('img', { class: 'preview', alt: '', hidden: true });
    const info = el('span', { class: 'muted' }, takesURL ? '' : 'a file (sent as a data URI)');
    let dataURI = '';
    file.addEventListener('change', () => {
      dataURI = '';
      const f = file.files[0];
      if (!f) { preview.hidden = true; info.textContent = ''; return; }
      if (url) url.value = '';
      const read = readDataURL(f).then((d) => {
        dataURI = d;
        preview.src = d;
        preview.hidden = false;
        info.textContent = `${f.name}, ${formatBytes(f.size)}`;
      }, (e) => { info.textContent = 'could not read the file: ' + e; });
      pending.add(read);
      read.finally(() => pending.delete(read));
    });
    if (url) {
      url.addEventListener('change', () => {
        if (url.value.trim() === '') return;
        file.value = ''; dataURI = ''; info.textContent = '';
        preview.src = url.value.trim();
        preview.hidden = false;
      });
      preview.addEventListener('error', () => {
        if (dataURI) return;
        preview.hidden = true;
        info.textContent = 'this browser could not show the URL; the server fetches it itself when the job runs';
      });
    }
    return {
      el: el('div', { class: 'image' }, el('div', { class: 'image-inputs' }, file, url, info), preview),
      get() {
        if (dataURI) return dataURI;
        const u = url ? url.value.trim() : '';
        return u === '' ? undefined : u;
      },
    };
  }

  function readDataURL(f) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(r.result);
      r.onerror = () => reject(r.error);
      r.readAsDataURL(f);
    });
  }

  function formatBytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KiB';
    return (n / (1 << 20)).toFixed(1) + ' MiB';
  }

  // ---- errors ----

  // fieldPath is the JSON path of a .field element: inputs.poses[1].cdnUrl.
  function fieldPath(node) {
    let path = '';
    for (let n = node; n && n.id !== 'fields'; n = n.parentElement) {
      if (n.dataset.key !== undefined) path = '.' + n.dataset.key + path;
      else if (n.dataset.index !== undefined) path = `[${n.dataset.index}]` + path;
    }
    return 'inputs' + path;
  }

  function clearErrors() {
    $('error').hidden = true;
    $('error').replaceChildren();
    for (const f of document.querySelectorAll('.field.invalid')) {
      f.classList.remove('invalid');
      f.querySelector('.field-error').textContent = '';
    }
  }

  // markField shows msg at the field named by path (or the nearest
  // enclosing field); it returns the element or null.
  function markField(path, msg) {
    let best = null;
    let bestLen = -1;
    for (const f of document.querySelectorAll('#fields .field')) {
      const p = fieldPath(f);
      if ((path === p || path.startsWith(p + '.') || path.startsWith(p + '[')) && p.length > bestLen) {
        best = f; bestLen = p.length;
      }
    }
    if (!best) return null;
    best.classList.add('invalid');
    best.querySelector('.field-error').textContent = msg;
    best.scrollIntoView({ block: 'center' });
    return best;
  }

  // showAPIError renders an API error body into box (and at its field).
  function showAPIError(box, status, body) {
    const msg = body.error || body.message || `HTTP ${status}`;
    const extra = Object.entries(body).filter(([k]) => !['error', 'message', 'code', 'field'].includes(k));
    box.replaceChildren(
      el('div', {}, el('strong', {}, `HTTP ${status}`), body.code ? el('code', { class: 'code' }, body.code) : '', ' ', msg),
      body.field ? el('div', { class: 'err-field' }, 'field: ', el('code', {}, body.field)) : '',
      extra.length ? el('div', { class: 'muted' }, extra.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')) : '');
    box.hidden = false;
    if (body.field && body.field.startsWith('inputs')) markField(body.field, msg);
  }

  function showError(box, msg) {
    box.replaceChildren(msg);
    box.hidden = false;
  }

  // ---- key, models ----

  async function checkKey() {
    sessionStorage.setItem(KEY_STORE, apiKey());
    if (!apiKey()) { $('key-status').textContent = 'no key'; return; }
    $('key-status').textContent = 'checking…';
    if (await showCredits()) { loadServed(); loadSaved(); }
  }

  // showCredits shows the key's balance (or why there is none); true
  // when the key works.
  async function showCredits() {
    const status = $('key-status');
    try {
      const res = await fetch('v1/credits', { headers: authHeaders(), cache: 'no-store' });
      const body = await readBody(res);
      status.textContent = res.ok ? `${body.credits} credits` : `${body.code || res.status}: ${body.error}`;
      status.className = res.ok ? 'ok' : 'bad';
      return res.ok;
    } catch (e) {
      status.textContent = 'the server did not answer: ' + e.message;
      status.className = 'bad';
      return false;
    }
  }

  // loadServed marks models no live worker serves.
  async function loadServed() {
    const res = await fetch('v1/models', { headers: authHeaders(), cache: 'no-store' });
    if (!res.ok) return;
    const { models } = await res.json();
    for (const m of models || []) {
      const opt = [...$('model').options].find((o) => o.value === m.name);
      if (opt) opt.textContent = m.served ? `${m.name} (${m.stages})` : `${m.name} — no worker serves it now`;
    }
  }

  // loadSaved offers the caller's saved models in the id fields.
  async function loadSaved() {
    const res = await fetch('v1/models/saved', { headers: authHeaders(), cache: 'no-store' });
    if (!res.ok) return;
    const { models } = await res.json();
    const list = $('saved-models') || document.body.appendChild(el('datalist', { id: 'saved-models' }));
    list.replaceChildren(...(models || []).map((m) => el('option', { value: m.id }, m.name)));
  }

  function showModel() {
    const m = $('model').value;
    sessionStorage.setItem(MODEL_STORE, m);
    const run = deref({ $ref: '#/components/schemas/Run_' + m });
    $('model-info').textContent = run.description || '';
    uid = 0;
    form = control({ $ref: '#/components/schemas/Inputs_' + m }, true, 'f0');
    $('fields').replaceChildren(form.el);
    clearErrors();
    $('request-json').textContent = '';
  }

  async function loadDocument() {
    try {
      const res = await fetch('openapi.json', { cache: 'no-store' });
      if (!res.ok) throw new Error('HTTP ' + res.status);
      doc = await res.json();
    } catch (e) {
      showError($('error'), 'Could not load the API document (openapi.json): ' + e.message);
      return;
    }
    const names = deref({ $ref: '#/components/schemas/ModelName' }).enum || [];
    const sel = $('model');
    sel.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
    const saved = sessionStorage.getItem(MODEL_STORE);
    sel.value = names.includes(saved) ? saved : (names.includes('tryon') ? 'tryon' : names[0]);
    sel.disabled = false;
    $('submit').disabled = false;
    showModel();
  }

  // ---- submit ----

  function shorten(key, v) {
    if (typeof v === 'string' && v.startsWith('data:') && v.length > SHOWN_DATA_CHARS) {
      return `${v.slice(0, SHOWN_DATA_CHARS)}… (${formatBytes(v.length)})`;
    }
    return v;
  }

  async function submit(ev) {
    ev.preventDefault();
    clearErrors();
    if (!apiKey()) { showError($('error'), 'Paste an API key first (fashiond keys create prints one; make run provisions dev-local-key).'); return; }
    sessionStorage.setItem(KEY_STORE, apiKey());
    await Promise.allSettled([...pending]);
    const body = { model_name: $('model').value, inputs: form.get() || {} };
    $('request-json').textContent = JSON.stringify(body, shorten, 2);
    $('submit').disabled = true;
    try {
      const res = await fetch('v1/run', {
        method: 'POST', headers: authHeaders({ 'Content-Type': 'application/json' }), body: JSON.stringify(body),
      });
      const job = await readBody(res);
      if (!res.ok) { showAPIError($('error'), res.status, job); return; }
      startJob(job);
    } catch (e) {
      showError($('error'), 'The request failed before the API answered: ' + e.message);
    } finally {
      $('submit').disabled = false;
    }
  }

  // ---- following a job ----

  const terminal = (status) => status !== 'starting';

  function startJob(job) {
    if (watch) watch.abort();
    jobID = job.id;
    shownOutputs = '';
    delete $('job').dataset.transport;
    $('job').hidden = false;
    $('job-error').hidden = true;
    $('outputs').replaceChildren();
    render(job);
    $('job').scrollIntoView({ block: 'start' });
    if (!terminal(job.status)) follow(job.id);
  }

  async function follow(id) {
    const ac = new AbortController();
    watch = ac;
    try {
      if (await streamStatus(id, ac.signal)) return;
    } catch (e) {
      if (ac.signal.aborted) return;
    }
    if (ac.signal.aborted) return;
    setTransport('polling', 'following by polling');
    await poll(id, ac.signal);
  }

  // streamStatus reads GET v1/status/{id} as Server-Sent Events; true when
  // the job's end arrived, false when the caller should poll instead.
  async function streamStatus(id, signal) {
    const res = await fetch('v1/status/' + encodeURIComponent(id), {
      headers: authHeaders({ Accept: 'text/event-stream' }), signal, cache: 'no-store',
    });
    if (!res.ok || !res.body || !(res.headers.get('Content-Type') || '').startsWith('text/event-stream')) return false;
    setTransport('live', 'live');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      buf += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const ev = parseEvent(buf.slice(0, end));
        buf = buf.slice(end + 2);
        if (ev.event === 'status' && ev.data) {
          const job = JSON.parse(ev.data);
          render(job);
          if (terminal(job.status)) { reader.cancel(); return true; }
        } else if (ev.event === 'error') {
          reader.cancel();
          return false;
        }
      }
    }
  }

  // setTransport says how the job is followed (data-transport stays after
  // the end, for whoever wants to know how the page learnt it).
  function setTransport(kind, text) {
    $('job').dataset.transport = kind;
    $('job-transport').textContent = text;
  }

  function parseEvent(block) {
    const ev = { event: 'message', data: '' };
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const name = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (name === 'event') ev.event = value;
      else if (name === 'data') ev.data += (ev.data ? '\n' : '') + value;
    }
    return ev;
  }

  async function poll(id, signal) {
    while (!signal.aborted) {
      try {
        const res = await fetch('v1/status/' + encodeURIComponent(id), { headers: authHeaders(), signal, cache: 'no-store' });
        const body = await readBody(res);
        if (res.ok) {
          render(body);
          if (terminal(body.status)) return;
        } else if (res.status === 404 || res.status === 401) {
          showAPIError($('job-error'), res.status, body);
          return;
        }
      } catch (e) {
        if (signal.aborted) return;
        $('job-transport').textContent = 'the server did not answer; retrying';
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  async function cancelJob() {
    $('cancel').disabled = true;
    try {
      const res = await fetch('v1/cancel/' + encodeURIComponent(jobID), { method: 'POST', headers: authHeaders() });
      const body = await readBody(res);
      if (res.ok) {
        if (watch) watch.abort();
        render(body);
      } else {
        showAPIError($('job-error'), res.status, body);
      }
    } catch (e) {
      showError($('job-error'), 'Cancel failed: ' + e.message);
    } finally {
      $('cancel').disabled = false;
    }
  }

  // ---- rendering a job ----

  function render(job) {
    if (job.id !== jobID) return;
    const st = $('job-status');
    st.textContent = job.status;
    st.className = 'status ' + job.status;
    $('job-id').textContent = job.id;
    const ended = terminal(job.status) && !$('cancel').hidden;
    $('cancel').hidden = terminal(job.status);
    if (terminal(job.status)) $('job-transport').textContent = '';
    if (ended) showCredits(); // charged or refunded now
    renderProgress(job);
    if (job.error) showError($('job-error'), job.error);
    const credits = [`credits used: ${job.credits_used ?? '?'}`];
    if (job.credits_refunded) credits.push(`refunded: ${job.credits_refunded}`);
    $('job-credits').textContent = credits.join(' · ');
    const key = JSON.stringify([job.output, job.outputs_info]);
    if (job.output && key !== shownOutputs) {
      shownOutputs = key;
      renderOutputs(job);
    }
  }

  function renderProgress(job) {
    const p = job.progress;
    const running = p && !terminal(job.status);
    $('job-progress').hidden = !running;
    if (running) {
      $('job-bar').value = p.fraction;
      const parts = [`${p.stage} ${Math.round(p.fraction * 100)}%`];
      if (p.detail) parts.push(p.detail);
      if (p.attempt) parts.push(`attempt ${p.attempt}`);
      $('job-stage').textContent = parts.join(' · ');
    }
    const q = job.queue;
    const queued = q && !terminal(job.status);
    $('job-queue').hidden = !queued;
    if (queued) {
      const eta = q.eta_seconds === null || q.eta_seconds === undefined ? '' : `, about ${Math.ceil(q.eta_seconds)} s`;
      $('job-queue').textContent = `queued: position ${q.position} (${q.ahead} ahead)${eta}${q.held ? ', held by the per-key share' : ''}`;
    }
  }

  function renderOutputs(job) {
    const info = job.outputs_info || [];
    $('outputs').replaceChildren(...job.output.map((url, i) => outputCard(job, url, i, info[i])));
  }

  function isVideo(job, url) {
    return url.startsWith('data:video/') || /\.(mp4|webm)(\?|$)/i.test(url) || job.model_name === 'image-to-video';
  }

  function outputCard(job, url, i, info) {
    const media = isVideo(job, url)
      ? el('video', { src: url, controls: true, loop: true, muted: true, playsinline: true, class: 'media' })
      : el('img', { src: url, alt: `output ${i + 1}`, class: 'media' });
    const link = url.startsWith('data:')
      ? el('a', { href: url, download: `output-${i + 1}` }, 'download')
      : el('a', { href: url, target: '_blank', rel: 'noopener' }, 'open');
    const card = el('figure', { class: 'output' }, media, el('figcaption', {}, `output ${i + 1} · `, link));
    if (info) card.append(outputInfo(info));
    return card;
  }

  function outputInfo(info) {
    const box = el('div', { class: 'info' },
      el('div', {}, el('span', { class: 'path ' + info.path }, info.path), ' ', info.method || ''));
    if (info.notes && info.notes.length) {
      box.append(el('div', { class: 'label' }, 'notes'), el('ul', { class: 'notes' }, ...info.notes.map((n) => el('li', {}, n))));
    }
    if (info.checks && info.checks.length) {
      const rows = info.checks.map((c) => el('tr', { class: c.pass ? 'pass' : 'fail' },
        el('td', {}, c.name), el('td', {}, fmt(c.value)), el('td', {}, `${c.bound === 'min' ? '≥' : '≤'} ${fmt(c.limit)}`),
        el('td', {}, c.pass ? 'pass' : 'FAIL')));
      box.append(el('div', { class: 'label' }, 'self-checks'), el('table', { class: 'checks' },
        el('thead', {}, el('tr', {}, el('th', {}, 'check'), el('th', {}, 'value'), el('th', {}, 'limit'), el('th', {}, ''))),
        el('tbody', {}, ...rows)));
    }
    return box;
  }

  function fmt(x) {
    return typeof x === 'number' ? String(Number(x.toPrecision(4))) : String(x);
  }

  // ---- start ----

  function start() {
    const key = sessionStorage.getItem(KEY_STORE) || '';
    $('api-key').value = key;
    $('api-key').addEventListener('change', checkKey);
    $('key-check').addEventListener('click', checkKey);
    $('model').addEventListener('change', showModel);
    $('run-form').addEventListener('submit', submit);
    $('cancel').addEventListener('click', cancelJob);
    loadDocument().then(() => { if (key) checkKey(); });
  }

  start();
})();
