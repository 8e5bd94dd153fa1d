"use strict";
// Lays out the report's data (the JSON element #data, built by cprace):
// the index of races, and the selected race. Text goes in as text nodes
// only, so nothing a trace names can become markup.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);

  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }

  const plural = (n, w) => n.toLocaleString("en-US") + " " + w + (n === 1 ? "" : "s");

  // Header: what was analysed and the SUMMARY.
  const notes = el("ul", { class: "notes" });
  for (const n of data.notes) notes.append(el("li", { text: n }));
  if (data.suppressed) notes.append(el("li", { text: data.suppressed }));
  if (data.not_shown > 0) {
    notes.append(el("li", { text: plural(data.not_shown, "more location pair") +
      " not shown (--max-reports N shows the first N; the text report shows them all)" }));
  }
  document.body.append(
    el("header", {},
      el("h1", { text: "cprace: " + plural(data.location_pairs, "location pair") + " with races (" + data.relation + ")" }),
      el("div", { class: "summary mono", text: data.summary }),
      notes.childElementCount ? notes : null));

  // The index.
  const rows = data.races.map((r, i) => ({
    i: i,
    id: i + 1,
    variable: r.variable,
    kind: r.kinds.join(", "),
    // The file's last component: paths of recorded programs are long.
    where: (r.file.split("/").pop() || r.file) + (r.line ? ":" + r.line : ""),
    file: r.file,
    function: r.function,
    relation: r.relation,
    count: r.count,
    threads: r.threads.join(", "),
  }));
  const columns = [
    ["id", "#", true], ["variable", "variable"], ["kind", "kind"], ["where", "where"],
    ["function", "function"], ["relation", "relation"], ["count", "racy events", true], ["threads", "threads"],
  ];
  let sort = { key: "id", dir: 1 };
  let selected = -1;

  const field = el("select", { "aria-label": "filter field", id: "field" },
    ...["any", "file", "function", "variable", "relation"].map((f) => el("option", { value: f, text: f })));
  const filter = el("input", { type: "search", id: "filter", placeholder: "filter races", "aria-label": "filter" });
  const count = el("span", { id: "count" });
  const head = el("tr", {});
  const body = el("tbody", {});
  const table = el("table", { id: "races" }, el("thead", {}, head), body);
  for (const [key, label, num] of columns) {
    head.append(el("th", {
      "data-key": key, scope: "col", text: label,
      onclick: () => {
        sort = { key: key, dir: sort.key === key ? -sort.dir : (num ? -1 : 1) };
        renderIndex();
      },
    }));
  }
  const detail = el("section", { id: "detail", "aria-live": "polite" });
  document.body.append(el("main", {},
    el("section", { id: "index" }, el("div", { id: "controls" }, field, filter, count), table),
    detail));
  filter.addEventListener("input", renderIndex);
  field.addEventListener("change", renderIndex);

  function matches(row) {
    const q = filter.value.trim().toLowerCase();
    if (!q) return true;
    const f = field.value;
    const hay = f === "any" ? [row.file, row.function, row.variable, row.relation, row.where] : [row[f]];
    return hay.some((s) => String(s).toLowerCase().includes(q));
  }

  function renderIndex() {
    const shown = rows.filter(matches);
    shown.sort((a, b) => {
      const x = a[sort.key], y = b[sort.key];
      const c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
      return c * sort.dir || a.i - b.i;
    });
    for (const th of head.children) {
      th.setAttribute("aria-sort", th.dataset.key === sort.key ? (sort.dir > 0 ? "ascending" : "descending") : "none");
    }
    body.replaceChildren(...shown.map((row) => {
      const tr = el("tr", { "data-race": String(row.i), onclick: () => select(row.i) });
      for (const [key, , num] of columns) tr.append(el("td", { class: num ? "num" : "", text: String(row[key]) }));
      if (row.i === selected) tr.className = "selected";
      return tr;
    }));
    count.textContent = shown.length + " of " + plural(rows.length, "race");
  }

  function snippet(key) {
    const s = data.snippets[key];
    const pre = el("pre", { class: "snippet" });
    s.lines.forEach((line, k) => {
      const no = s.start + k;
      pre.append(el("span", { class: no === s.line ? "at" : "" }, el("span", { class: "no", text: String(no) }), line));
    });
    return pre;
  }

  // A stack, the first frame with source open.
  function stack(frames) {
    const ol = el("ol", { class: "stack" });
    let opened = false;
    for (const f of frames) {
      if (f.source && data.snippets[f.source]) {
        const d = el("details", {}, el("summary", {}, el("code", { text: f.text })), snippet(f.source));
        if (!opened) d.open = true;
        opened = true;
        ol.append(el("li", {}, d));
      } else {
        ol.append(el("li", {}, el("code", { text: f.text })));
      }
    }
    return ol;
  }

  function block(cls, header, frames) {
    return el("div", { class: cls }, el("div", { class: "head", text: header + (frames.length ? ":" : "") }),
      frames.length ? stack(frames) : null);
  }

  function timeline(w) {
    const box = el("div", { class: "timeline", role: "img", "aria-label": "witness timeline" });
    const n = w.steps.length;
    w.lanes.forEach((name, lane) => {
      const row = el("div", { class: "lane", "data-thread": name }, el("div", { class: "name", text: name }));
      row.style.gridTemplateColumns = "6em repeat(" + n + ", minmax(22px, 1fr))";
      w.steps.forEach((s, k) => {
        if (s.lane !== lane) return;
        const events = s.first === s.last ? "event " + s.first : "events " + s.first + "-" + s.last;
        const step = el("div", { class: "step" + (s.racy ? " racy" : ""), title: s.text + " [" + events + "]",
          text: s.racy ? "race" : String(w.elided + k + 1) });
        step.style.gridColumn = String(k + 2);
        row.append(step);
      });
      box.append(row);
    });
    return box;
  }

  function select(i) {
    selected = i;
    for (const tr of body.children) tr.classList.toggle("selected", tr.dataset.race === String(i));
    const r = data.races[i];
    if (history.replaceState) history.replaceState(null, "", "#race-" + (i + 1));
    const kids = [];
    const predicted = r.relation.endsWith("(predicted)");
    kids.push(el("h2", {}, "Data race on ", el("code", { text: r.variable }), " (" + r.kinds.join(", ") + ") ",
      el("span", { class: "tag" + (predicted ? " predicted" : ""), text: r.relation })));
    kids.push(el("p", { text: plural(r.count, "racy event") + " with these locations (the first shown); threads: " +
      r.threads.join(", ") + (r.other_variables ? "; also on other variables" : "") }));
    kids.push(el("div", { class: "accesses" },
      block("access", r.accesses[0].header, r.accesses[0].stack),
      block("access", r.accesses[1].header, r.accesses[1].stack)));
    if (r.sections.length) {
      kids.push(el("h3", { text: "Memory, locks and threads" }));
      for (const s of r.sections) kids.push(block("section", s.header, s.stack));
    }
    if (r.ordering.length) {
      kids.push(el("h3", { text: "What ordered it in the observed run" }));
      kids.push(el("ul", { class: "ordering" }, ...r.ordering.map((l) => el("li", { text: l }))));
    }
    if (r.witness) {
      kids.push(el("h3", { text: "Witness" }));
      const w = r.witness;
      if (!w.found) {
        kids.push(el("p", { class: "empty", text: "No witness reordering was found for this race." }));
      } else {
        let what = plural(w.events, "witness event") + " in " + plural(w.lanes.length, "thread") +
          ", then the two accesses; one lane per thread, steps in order";
        if (w.elided) what += " (the first " + plural(w.elided, "step") + " not drawn)";
        kids.push(el("p", { text: what + ". Check it with cprace verify." }));
        kids.push(timeline(w));
        const lines = w.text.length ? w.text : w.steps.map((s) => s.text);
        kids.push(el("ul", { class: "steps" }, ...lines.map((l) => el("li", { text: l }))));
      }
    } else if (!data.witnesses && r.relation !== "hb") {
      kids.push(el("p", { class: "empty", text: "Run with --witness to see a reordering of the run that exhibits this race." }));
    }
    if (r.summary) kids.push(el("div", { class: "summaryline", text: "SUMMARY: " + r.summary }));
    detail.replaceChildren(...kids);
  }

  renderIndex();
  const m = /^#race-(\d+)$/.exec(location.hash);
  const first = m ? Number(m[1]) - 1 : 0;
  if (first >= 0 && first < rows.length) select(first);
  else detail.append(el("p", { class: "empty", text: rows.length ? "Select a race." : "No races." }));
  document.addEventListener("keydown", (e) => {
    if (e.target === filter || (e.key !== "j" && e.key !== "k")) return;
    const order = Array.from(body.children, (tr) => Number(tr.dataset.race));
    const at = order.indexOf(selected) + (e.key === "j" ? 1 : -1);
    if (at >= 0 && at < order.length) select(order[at]);
  });
  // When the page was drawn, in ms from the start of navigation (for the benchmark).
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "true";
})();
