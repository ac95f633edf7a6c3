// The session page's one script: it shows the call the chart or a link names (its figures and, for an
// agent call, its prompt rebuilt from the stored blocks), moves between bars with the keyboard,
// opens and closes the timeline's parts, and, when served live, follows the log as it grows.
// Text from the log only ever reaches the page as textContent, never as markup.
(() => {
  "use strict";
  let data = null;
  let calls = [];
  const bySeq = new Map();
  let current = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const child of children) node.append(typeof child === "string" ? marked(child) : child);
    return node;
  }
  // Text with each bidirectional control or invisible character as a <U+202E> mark (text.py
  // gives the patterns): it can neither reorder what follows nor hide in a name.
  let marks = null;
  function marked(text) {
    if (!marks && data && data.marks) marks = new RegExp("(" + data.marks.joins + ")|(" + data.marks.invisible + ")", "gu");
    if (!marks) return text;
    const out = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(marks)) {
      if (m[1] !== undefined) continue;  // an emoji's own joiner
      if (m.index > at) out.append(text.slice(at, m.index));
      const code = m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      const mark = document.createElement("span");
      mark.className = "ch";
      mark.title = "U+" + code;
      mark.textContent = "<U+" + code + ">";
      out.append(mark);
      at = m.index + m[0].length;
    }
    if (at === 0) return text;
    if (at < text.length) out.append(text.slice(at));
    return out;
  }
  const fmt = (n) => n.toLocaleString("en-US");
  // null: the model has no price (cli/log/common.py UNPRICED)
  const money = (v) => (v === null ? "unpriced" : v >= 0.0001 || v === 0 ? "$" + v.toFixed(4) : "$" + v.toFixed(6));
  const pct = (v) => (100 * v).toFixed(1) + "%";

  function load() {
    data = JSON.parse(document.getElementById("scribe-data").textContent);
    calls = [];
    bySeq.clear();
    decode();
  }

  // calls not decoded yet; each agent prompt is the references it adds to the one before
  function decode() {
    let prev = [];
    for (let k = calls.length - 1; k >= 0; k--) if (calls[k].prompt) { prev = calls[k].prompt.blocks; break; }
    for (let i = calls.length; i < data.calls.length; i++) {
      const c = data.calls[i];
      const call = { seq: c[0], purpose: c[1], model: c[2], input: c[3], cache_read: c[4], cache_write: c[5],
        output: c[6], latency: c[7], cost: c[8], uncached: c[9], running: c[10], i };
      calls.push(call);
      bySeq.set(call.seq, call);
      const p = data.prompts[call.seq];
      if (!p) continue;
      const blocks = prev.slice(0, p.p[0]).concat(p.p.slice(1));
      call.prompt = { ...p, blocks };
      prev = blocks;
    }
  }

  // --- one block of a prompt, as words -----------------------------------------------------
  function parseBlock(text) {
    const m = /^(user|assistant):/.exec(text);
    return { role: m ? m[1] : null, body: JSON.parse(m ? text.slice(m[0].length) : text) };
  }
  function blockText(body, pretty = true) {
    if (typeof body.text === "string") return body.text;
    if (body.type === "tool_use") return body.name + " " + JSON.stringify(body.input, null, pretty ? 1 : 0);
    if (body.type === "tool_result") {
      const c = body.content;
      return typeof c === "string" ? c : JSON.stringify(c, null, 1);
    }
    if (body.input_schema) return body.name + ": " + (body.description || "") + "\n" + JSON.stringify(body.input_schema, null, 1);
    return JSON.stringify(body, null, 1);
  }
  function sections(prompt) {
    // where each block sits: tool definition, system block, or the n-th message (roles alternate)
    const out = [];
    let message = 0, role = null;
    prompt.blocks.forEach((ref, k) => {
      if (k < prompt.t) { out.push("tool definition"); return; }
      if (k < prompt.t + prompt.s) { out.push(k === prompt.t ? "system instructions" : "system · observations " + (k - prompt.t)); return; }
      const r = parseBlock(data.blocks[ref]).role;
      if (r !== role) { message += 1; role = r; }
      out.push("message " + message + " · " + r);
    });
    return out;
  }

  function blockItem(call, k, where) {
    const prompt = call.prompt;
    const ref = prompt.blocks[k];
    const { body } = parseBlock(data.blocks[ref]);
    const text = blockText(body);
    // after what was read: written up to the last breakpoint, if the server billed a write at all
    const lastPoint = prompt.bp.length && call.cache_write > 0 ? prompt.bp[prompt.bp.length - 1] : -1;
    const state = k < prompt.c ? "cached" : k <= lastPoint ? "written" : "uncached";
    const li = el("li", { class: "block " + state + (k === prompt.d ? " differs" : ""), id: "block-" + (k + 1) });
    const summary = el("summary", {}, el("b", {}, "block " + (k + 1)), " · " + where + " · " + (body.type || (body.input_schema ? "tool" : "?")));
    summary.append(el("span", { class: "tag " + state }, state === "cached" ? "from the cache" : state === "written" ? "written to the cache" : "not cached"));
    if (prompt.bp.includes(k)) summary.append(el("span", { class: "tag" }, "cache breakpoint"));
    if (k === prompt.d) summary.append(el("span", { class: "tag differs" }, "first block that differs from the previous call"));
    const first = blockText(body, false).split("\n", 1)[0];
    summary.append(" ", el("span", { class: "preview" }, first.length > 110 ? first.slice(0, 110) + "…" : first));
    const details = el("details", {}, summary);
    details.addEventListener("toggle", () => {
      if (!details.open || details.dataset.filled) return;
      details.dataset.filled = "1";
      details.append(el("pre", {}, text));
      if (k === prompt.d && prompt.w !== null) {
        details.append(el("p", {}, "The previous call's prompt had here:"), el("pre", {}, blockText(parseBlock(data.blocks[prompt.w]).body)));
      }
    });
    li.append(details);
    return li;
  }

  // --- the call panel -------------------------------------------------------------------------
  function show(seq, { scroll = false } = {}) {
    const call = bySeq.get(seq);
    const panel = document.getElementById("call");
    if (!call || !panel) return;
    current = call;
    mark(call);
    panel.replaceChildren();
    panel.append(el("h3", { id: "call-title" }, `Call ${call.i + 1} of ${calls.length} · ${call.purpose} · ${call.model} · seq ${call.seq}`));
    const prev = el("button", { type: "button", "data-step": "-1" }, "← previous call");
    const next = el("button", { type: "button", "data-step": "1" }, "next call →");
    if (call.i === 0) prev.disabled = true;
    if (call.i === calls.length - 1) next.disabled = true;
    const event = el("a", { href: "#e-" + call.seq }, "its usage event in the timeline");
    panel.append(el("div", { class: "call-nav" }, prev, next, event));
    const prompt = call.cache_read + call.cache_write + call.input;
    const rows = [["cache read", fmt(call.cache_read)], ["cache write", fmt(call.cache_write)], ["uncached input", fmt(call.input)],
      ["output", fmt(call.output)], ["hit rate", pct(prompt ? call.cache_read / prompt : 0)], ["cost", money(call.cost)],
      ["with no caching", money(call.uncached)], ["session so far", money(call.running)], ["latency", fmt(call.latency) + " ms"]];
    const table = el("table", { class: "call-figures" });
    for (const [k, v] of rows) table.append(el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)));
    panel.append(table);
    const p = call.prompt;
    if (p) {
      panel.append(el("p", { class: "reason" + (p.d !== null ? " broke" : "") }, p.r));
      panel.append(el("p", {}, "The same request, byte for byte: ", el("code", {}, "scribe log prompt --at " + p.at),
        ` · ${p.blocks.length} blocks: ${p.t} tool definitions, ${p.s} system, then the messages.`));
      const where = sections(p);
      const list = el("ol", { class: "blocks", "aria-label": "the prompt's blocks in cache order" });
      p.blocks.forEach((_, k) => list.append(blockItem(call, k, where[k])));
      panel.append(list);
    } else {
      panel.append(el("p", { class: "reason" }, call.purpose === "agent"
        ? "No assistant event answers this call, so its prompt cannot be rebuilt."
        : `A ${call.purpose} call: its request is built from the log by the ${call.purpose}, not rendered from it, so it is not shown here.`));
    }
    if (scroll) panel.scrollIntoView({ block: "nearest" });
  }

  function fromHash() {
    const m = /^#call-(\d+)$/.exec(location.hash);
    if (m) show(Number(m[1]), { scroll: true });
  }

  // --- the chart: one control for all the bars ---------------------------------------------
  const chart = () => document.querySelector("svg.calls");

  function mark(call) {
    const svg = chart();
    const selected = document.getElementById("chart-selected");
    if (!svg || !selected) return;
    selected.setAttribute("x", String(Number(svg.dataset.left) + call.i * Number(svg.dataset.step) - 1));
    svg.setAttribute("aria-valuenow", String(call.i + 1));
    svg.setAttribute("aria-valuetext", `call ${call.i + 1} of ${calls.length}, ${call.purpose}, seq ${call.seq}, ${money(call.cost)}`);
  }

  function callAt(svg, clientX) {
    const box = svg.getBoundingClientRect();
    const i = Math.floor((clientX - box.left - Number(svg.dataset.left)) / Number(svg.dataset.step));
    return calls[Math.min(calls.length - 1, Math.max(0, i))];
  }

  function choose(call) {
    if (!call) return;
    history.replaceState(null, "", "#call-" + call.seq);
    show(call.seq);
    document.getElementById("chart-selected")?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  function step(by) {
    if (current) choose(calls[Math.min(calls.length - 1, Math.max(0, current.i + by))]);
  }

  function tip(svg, event) {
    const box = document.getElementById("chart-tip");
    if (!box) return;
    const call = callAt(svg, event.clientX);
    const prompt = call.cache_read + call.cache_write + call.input;
    box.textContent = `call ${call.i + 1} · ${call.purpose} · seq ${call.seq} · ${call.model}\n` +
      `cache read ${fmt(call.cache_read)} · cache write ${fmt(call.cache_write)} · uncached input ${fmt(call.input)} · output ${fmt(call.output)}\n` +
      `${money(call.cost)} (${money(call.uncached)} with no caching) · hit rate ${pct(prompt ? call.cache_read / prompt : 0)} · so far ${money(call.running)}`;
    const holder = box.parentElement.getBoundingClientRect();
    box.style.left = Math.max(0, Math.min(event.clientX - holder.left + 12, holder.width - 360)) + "px";
    box.style.top = (event.clientY - holder.top + 14) + "px";
    box.hidden = false;
  }

  document.addEventListener("click", (e) => {
    const target = e.target instanceof Element ? e.target : null;
    if (!target) return;
    const svg = target.closest("svg.calls");
    if (svg) { choose(callAt(svg, e.clientX)); return; }
    const stepper = target.closest("button[data-step]");
    if (stepper) { step(Number(stepper.dataset.step)); return; }
    const all = target.closest("button[data-all]");
    if (all) {
      const [what, open] = all.dataset.all.split(":");
      for (const d of document.querySelectorAll(what === "turns" ? "details.turn" : "details.result")) d.open = open === "open";
    }
  });
  document.addEventListener("pointermove", (e) => {
    const svg = e.target instanceof Element && e.target.closest("svg.calls");
    if (svg) tip(svg, e);
    else { const box = document.getElementById("chart-tip"); if (box && !box.hidden) box.hidden = true; }
  });
  document.addEventListener("keydown", (e) => {
    if (!(e.target instanceof Element) || !e.target.matches("svg.calls")) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: 1, ArrowDown: -1, PageUp: 10, PageDown: -10,
      Home: -calls.length, End: calls.length };
    if (!(e.key in moves)) return;
    e.preventDefault();
    step(moves[e.key]);
  });
  window.addEventListener("hashchange", fromHash);

  // --- following a live log -------------------------------------------------------------------
  function fragment(html) {
    // markup made by scribe (escaped as in the page itself), never text from the log as such
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content.firstElementChild;
  }

  function apply(u) {
    const atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
    const active = document.activeElement && document.activeElement.id;
    for (const [id, html] of Object.entries(u.sections)) document.getElementById(id)?.replaceWith(fragment(html));
    const turns = document.getElementById("turns");
    turns.querySelector(":scope > p.empty")?.remove();
    for (const [id, html] of u.turns) {
      const fresh = fragment(html);
      const old = document.getElementById(id);
      if (!old) { turns.append(fresh); continue; }
      const state = new Map([...old.querySelectorAll("details[id]")].map((d) => [d.id, d.open]));
      if (old instanceof HTMLDetailsElement) fresh.open = old.open;
      for (const d of fresh.querySelectorAll("details[id]")) if (state.has(d.id)) d.open = state.get(d.id);
      old.replaceWith(fresh);
    }
    data.version = u.version;
    for (const b of u.blocks) data.blocks.push(b);
    for (const c of u.calls) data.calls.push(c);
    Object.assign(data.prompts, u.prompts);
    decode();
    const open = [...document.querySelectorAll("#call ol.blocks > li > details[open]")].map((d) => d.parentElement.id);
    if (current) show(current.seq); else if (calls.length) show(calls[0].seq);
    for (const id of open) { const d = document.getElementById(id)?.querySelector(":scope > details"); if (d) d.open = true; }
    if (active) document.getElementById(active)?.focus({ preventScroll: true });
    if (atBottom) window.scrollTo(0, document.documentElement.scrollHeight);
  }

  function follow() {
    let failures = 0;
    const tick = async () => {
      try {
        const held = `events=${data.version}&calls=${data.calls.length}&blocks=${data.blocks.length}`;
        const answer = await fetch("update?" + held, { cache: "no-store" });
        if (!answer.ok) throw new Error(String(answer.status));
        const u = await answer.json();
        failures = 0;
        if (u.version !== data.version) apply(u);
      } catch (err) {
        failures += 1;
        if (failures >= 5) {
          const badge = document.getElementById("live");
          if (badge) { badge.textContent = "the server stopped: this page no longer follows the log"; badge.classList.add("stopped"); }
          return;
        }
      }
      setTimeout(tick, data.poll_ms);
    };
    setTimeout(tick, data.poll_ms);
  }

  load();
  if (/^#call-\d+$/.test(location.hash)) fromHash(); else if (calls.length) show(calls[0].seq);
  if (data.live) follow();
})();
