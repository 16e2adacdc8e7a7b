// The browser demo's page: asks the server for the reader's page as HTML fragments (already
// escaped there), swaps them in when the server's event stream says something changed, and sends
// what the person does back to the server. It never builds HTML from a message itself.

const $ = (id) => document.getElementById(id);
const view = { user: '', channel: '', thread: '', tab: 'channel' };
/** Ticked checkboxes of messages, kept across redraws: `channel|ts|action_id|value`. */
const ticked = new Set();
let setup;
let refreshing = false;
let again = false;

async function post(path, body) {
  const res = await fetch(`/api/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await res.json().catch(() => ({ ok: false, error: `HTTP ${res.status}` }));
  if (!answer.ok) notice(answer.error ?? `HTTP ${res.status}`);
  return answer;
}

/** An async listener whose failure is shown on the page rather than lost. */
const later =
  (fn) =>
  (...args) => {
    fn(...args).catch((error) => notice(error.message));
  };

let noticeTimer;
function notice(text) {
  const el = $('notice');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (el.hidden = true), 6000);
}

/** Replaces a region's content only when it changed, keeping what the person typed or ticked. */
function swap(el, html) {
  if (el.dataset.shown === html) return false;
  const typed = formValues(el);
  const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  el.innerHTML = html;
  el.dataset.shown = html;
  restoreValues(el, typed);
  if (nearBottom) el.scrollTop = el.scrollHeight;
  return true;
}

function formValues(el) {
  const form = el.querySelector('form[data-view-id]');
  if (!form) return undefined;
  const values = {};
  for (const input of form.querySelectorAll('input, textarea, select')) {
    const key = `${input.name}|${input.type === 'checkbox' ? input.value : ''}`;
    values[key] = input.type === 'checkbox' ? input.checked : input.value;
  }
  return { viewId: form.dataset.viewId, values };
}

function restoreValues(el, typed) {
  const form = el.querySelector('form[data-view-id]');
  if (!form || !typed || typed.viewId !== form.dataset.viewId) return;
  for (const input of form.querySelectorAll('input, textarea, select')) {
    const key = `${input.name}|${input.type === 'checkbox' ? input.value : ''}`;
    if (!(key in typed.values)) continue;
    if (input.type === 'checkbox') input.checked = typed.values[key];
    else input.value = typed.values[key];
  }
}

function restoreTicks(root) {
  for (const box of root.querySelectorAll('.message .checkboxes input[type=checkbox]')) box.checked = ticked.has(tickKey(box));
}

function tickKey(box) {
  const message = box.closest('.message');
  const group = box.closest('.checkboxes');
  return `${view.channel}|${message?.dataset.ts}|${group?.dataset.actionId}|${box.value}`;
}

async function refresh() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  try {
    do {
      again = false;
      const query = new URLSearchParams({ user: view.user, channel: view.channel, thread: view.thread });
      const res = await fetch(`/api/state?${query}`);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const state = await res.json();
      if (swap($('channel'), state.channel)) restoreTicks($('channel'));
      const thread = $('thread');
      thread.hidden = state.thread === '';
      if (swap(thread, state.thread)) restoreTicks(thread);
      swap($('home'), state.home);
      swap($('estate'), state.estate);
      const modal = $('modal');
      modal.hidden = state.modal === '';
      swap(modal, state.modal);
    } while (again);
  } catch (error) {
    notice(`Could not read the page: ${error.message}`);
  } finally {
    refreshing = false;
  }
}

function showTab() {
  $('channel-view').hidden = view.tab !== 'channel';
  $('home-view').hidden = view.tab !== 'home';
  for (const nav of document.querySelectorAll('.nav')) {
    nav.classList.toggle('active', view.tab === 'home' ? nav.dataset.nav === 'home' : nav.dataset.navChannel === view.channel);
  }
  const channel = setup.channels.find((c) => c.id === view.channel);
  $('channel-title').textContent = `#${channel?.name ?? view.channel}`;
}

async function openHome() {
  view.tab = 'home';
  view.thread = '';
  showTab();
  await post('home', { user: view.user });
  await refresh();
}

/** A click as Slack sends it: for a message, with the message's checkboxes as ticked. */
async function sendClick(button) {
  const d = button.dataset;
  if (d.url) window.open(d.url, '_blank', 'noopener');
  const body = { user: view.user, surface: d.surface, actionId: d.actionId, blockId: d.blockId, value: d.value };
  if (d.surface === 'message') {
    Object.assign(body, { channel: d.channel, ts: d.ts, ticks: {} });
    for (const group of button.closest('.message')?.querySelectorAll('.checkboxes') ?? []) {
      body.ticks[group.dataset.actionId] = [...group.querySelectorAll('input:checked')].map((i) => i.value);
    }
  }
  if (d.surface === 'view') body.viewId = d.viewId;
  await post('click', body);
}

/** Slack's confirm dialog: the click is sent only after its confirm button. */
function confirmFirst(button, template) {
  const dialog = $('dialog');
  const box = document.createElement('div');
  box.className = 'dialog';
  box.append(...template.cloneNode(true).childNodes);
  dialog.replaceChildren(box);
  dialog.hidden = false;
  box.addEventListener(
    'click',
    later(async (event) => {
      const choice = event.target.closest('[data-confirm]')?.dataset.confirm;
      if (!choice) return;
      dialog.hidden = true;
      dialog.replaceChildren();
      if (choice === 'yes') await sendClick(button);
    }),
  );
}

document.addEventListener(
  'click',
  later(async (event) => {
    const target = event.target.closest('[data-act], [data-nav], [data-nav-channel]');
    if (!target) return;
    if (target.dataset.navChannel) {
      Object.assign(view, { channel: target.dataset.navChannel, thread: '', tab: 'channel' });
      showTab();
      return refresh();
    }
    if (target.dataset.nav === 'home') return openHome();
    switch (target.dataset.act) {
      case 'click': {
        const template = target.closest('.confirmable')?.querySelector('.confirm');
        return template ? confirmFirst(target, template) : sendClick(target);
      }
      case 'open-thread':
        view.thread = target.dataset.ts;
        return refresh();
      case 'close-thread':
        view.thread = '';
        return refresh();
      case 'close-view':
        return post('close', { user: view.user, viewId: target.closest('form').dataset.viewId });
    }
  }),
);

document.addEventListener('change', (event) => {
  const box = event.target;
  if (box.type !== 'checkbox' || !box.closest('.message')) return;
  if (box.checked) ticked.add(tickKey(box));
  else ticked.delete(tickKey(box));
});

document.addEventListener(
  'submit',
  later(async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.viewId) return;
    event.preventDefault();
    const values = {};
    for (const block of form.querySelectorAll('.input[data-block-id]')) {
      const id = block.dataset.blockId;
      if (block.dataset.kind === 'checkboxes') values[id] = [...block.querySelectorAll('input:checked')].map((i) => i.value);
      else if (block.dataset.kind === 'static_select') values[id] = block.querySelector('select').value || null;
      else if (block.dataset.kind === 'plain_text_input') values[id] = block.querySelector('input, textarea').value;
    }
    const answer = await post('submit', { user: view.user, viewId: form.dataset.viewId, values });
    if (answer.outcome === 'missing_required') {
      for (const [id, text] of Object.entries(answer.errors)) {
        const block = [...form.querySelectorAll('.input[data-block-id]')].find((b) => b.dataset.blockId === id);
        const error = document.createElement('div');
        error.className = 'error';
        error.textContent = `⚠ ${text}`;
        block?.append(error);
      }
    }
  }),
);

function fillBreakTargets() {
  const cluster = setup.clusters[$('break-cluster').value];
  const options = $('break-kind').value === 'budget-blocks' ? cluster.budgets : cluster.nodes;
  $('break-target').replaceChildren(...options.map((o) => new Option(o, o)));
}

async function start() {
  setup = await (await fetch('/api/setup')).json();
  $('user').replaceChildren(...setup.users.map((u) => new Option(`@${u.name} (${u.role})`, u.id)));
  view.user = setup.users[0].id;
  view.channel = setup.channels[0].id;
  $('channels').replaceChildren(
    ...setup.channels.map((c) => {
      const nav = document.createElement('button');
      nav.type = 'button';
      nav.className = 'nav';
      nav.dataset.navChannel = c.id;
      nav.textContent = `# ${c.name}`;
      return nav;
    }),
  );
  $('break-cluster').replaceChildren(...Object.keys(setup.clusters).map((c) => new Option(c, c)));
  $('break-cluster').value = Object.keys(setup.clusters).includes('production') ? 'production' : Object.keys(setup.clusters)[0];
  $('break-kind').replaceChildren(...Object.entries(setup.breaks).map(([kind, label]) => new Option(label, kind)));
  fillBreakTargets();
  $('break-cluster').addEventListener('change', fillBreakTargets);
  $('break-kind').addEventListener('change', fillBreakTargets);
  $('break').addEventListener(
    'submit',
    later(async (event) => {
      event.preventDefault();
      const answer = await post('break', {
        cluster: $('break-cluster').value,
        kind: $('break-kind').value,
        target: $('break-target').value,
      });
      if (answer.ok) notice(answer.message);
    }),
  );
  $('break-clear').addEventListener(
    'click',
    later(async () => {
      const answer = await post('break', { cluster: $('break-cluster').value, kind: 'clear' });
      if (answer.ok) notice(answer.message);
    }),
  );
  $('user').addEventListener(
    'change',
    later(async () => {
      view.user = $('user').value;
      $('dialog').hidden = true;
      if (view.tab === 'home') return openHome();
      return refresh();
    }),
  );
  $('composer').addEventListener(
    'submit',
    later(async (event) => {
      event.preventDefault();
      const input = $('command');
      const text = input.value;
      if (text.trim() === '') return;
      const answer = await post('command', { user: view.user, channel: view.channel, text });
      if (answer.ok) input.value = '';
    }),
  );
  showTab();
  const events = new EventSource('/api/events');
  events.addEventListener('change', later(refresh));
  events.addEventListener('open', () => ($('live').textContent = 'live'));
  events.addEventListener('error', () => ($('live').textContent = 'reconnecting…'));
  await refresh();
  document.body.dataset.ready = 'true';
}

start().catch((error) => notice(`The page could not start: ${error.message}`));
