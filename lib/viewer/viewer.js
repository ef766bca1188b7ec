// The run viewer in the browser: draws the summary charts with plotly.js and lists every episode
// of the embedded data (the page's `tb-data` script), with filters, a transcript view whose
// sampled tokens are coloured by their advantage (or teacher − student log-prob), the episode's
// group, and two episodes side by side. Served live, it polls `data.json?after=STEP` for new
// steps. Plain DOM, no framework: the page must open from file:// with nothing installed.
(function () {
  "use strict";

  const data = JSON.parse(document.getElementById("tb-data").textContent);
  const state = {
    figures: data.figures,
    runs: data.runs,
    rows: [],
    filters: {},
    sort: "step",
    desc: false,
    mode: "advantage",
    panes: [null, null],
    lastStep: 0,
    tab: null,
    /** The what-if settings per run (index), changed from the run's own in the group view. */
    whatif: {},
    /** A fragment that names an episode not on the page yet (live: it may land later). */
    pending: null,
  };

  // ---- small DOM helpers -------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  const fmt = (x, d = 3) =>
    typeof x !== "number" || !Number.isFinite(x)
      ? "–"
      : Number.isInteger(x)
      ? String(x)
      : x.toFixed(d);
  const mean = (xs) => xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;

  // ---- episodes ------------------------------------------------------------------------------
  /** Why an episode was not trained, or null: the record's own words when it has them. */
  function excludedReason(e) {
    for (const k of ["excluded_reason", "exclusion_reason", "group_excluded_reason"]) {
      if (typeof e[k] === "string") return e[k];
    }
    if (typeof e.excluded === "string") return e.excluded;
    if (e.excluded && typeof e.excluded === "object") {
      return e.excluded.reason || JSON.stringify(e.excluded);
    }
    if (e.excluded === true || e.group_kept === false) {
      return "group dropped by the advantage pipeline (the record gives no reason)";
    }
    return null;
  }
  function status(e) {
    if (e.error) return "error";
    if (excludedReason(e)) return "excluded";
    const turns = e.turns || [];
    return turns.some((t) => t.score && t.score.trained) ? "trained" : "not trained";
  }
  /** Mean advantage over the episode's sampled tokens (RL turns without tokens: per turn). */
  function meanAdvantage(e) {
    const xs = (e.turns || []).flatMap((t) =>
      t.tokens && Array.isArray(t.tokens.advantages)
        ? t.tokens.advantages
        : t.tokens && t.tokens.advantages === null
        ? []
        : [(t.score && t.score.rl_advantage) || 0]
    );
    return xs.length ? mean(xs) : NaN;
  }
  function indexEpisodes(runs) {
    const rows = [];
    runs.forEach((run, ri) =>
      (run.episodes || []).forEach((e, i) => {
        rows.push({
          key: `${ri}:${i}`,
          run: ri,
          e,
          step: e.step,
          env: e.env_id || "?",
          group: e.group_id || "?",
          reward: typeof e.total_reward === "number" ? e.total_reward : NaN,
          success: e.success === true ? "yes" : e.success === false ? "no" : "?",
          stop: e.stop_reason || "?",
          status: status(e),
          turns: (e.turns || []).length,
          adv: meanAdvantage(e),
          index: i,
        });
      })
    );
    return rows;
  }

  // ---- charts --------------------------------------------------------------------------------
  function drawCharts() {
    const box = document.getElementById("charts");
    if (state.figures.length === 0) return;
    // Plotly sizes a chart by its box: a hidden tab's charts wait until the tab is shown.
    if (state.tab !== "charts") return;
    if (!globalThis.Plotly) {
      box.replaceChildren(el(
        "p",
        { class: "bad" },
        "plotly.js did not load (the page loads it from its assets folder, .viewer/, " +
          "next to the run directories: copy that folder with the report).",
      ));
      return;
    }
    state.figures.forEach((f, i) => {
      let div = document.getElementById(`chart${i}`);
      if (!div) {
        div = el("div", { id: `chart${i}`, class: "chart" });
        box.append(div);
      }
      div.figure = f;
      // Charts below the fold are drawn when they come near the viewport: a page of 20+
      // Plotly charts otherwise takes seconds before anything answers.
      if (div.drawn || i < EAGER_CHARTS || !globalThis.IntersectionObserver) drawChart(div);
      else observer().observe(div);
    });
  }
  const EAGER_CHARTS = 4;
  let chartObserver = null;
  function observer() {
    chartObserver = chartObserver || new IntersectionObserver((entries) => {
      for (const en of entries) {
        if (en.isIntersecting) {
          chartObserver.unobserve(en.target);
          drawChart(en.target);
        }
      }
    }, { rootMargin: "400px" });
    return chartObserver;
  }
  function drawChart(div) {
    const f = div.figure;
    // The mode bar stands at the right edge, so it never covers a chart's title.
    const named = f.data.filter((t) => t.showlegend !== false && t.name).length;
    // A legend below the plot, across its width, and long names wrapped: at the right of a
    // half-page chart a run's name was cut off (issue 42).
    const legend = named > 1 && (!f.layout || f.layout.showlegend !== false)
      ? {
        legend: { orientation: "h", x: 0, xanchor: "left", y: -0.3, yanchor: "top" },
        margin: { t: 60, l: 60, r: 40, b: 60 + 22 * Math.min(named, 6) },
      }
      : {};
    const layout = Object.assign(
      { margin: { t: 60, l: 60, r: 40, b: 50 }, modebar: { orientation: "v" } },
      f.layout,
      legend,
    );
    if (legend.legend) div.style.height = `${360 + 22 * Math.min(named, 6)}px`;
    const traces = f.data.map((t) => t.name ? { ...t, name: wrapName(t.name) } : t);
    globalThis.Plotly.react(div, traces, layout, { responsive: true, displaylogo: false });
    div.drawn = true;
    div.dataset.drawn = "true";
  }
  /** A long legend entry on several lines (Plotly breaks lines at `<br>` only). */
  function wrapName(name) {
    const words = String(name).split(/(?<=[-_/ ])/);
    const lines = [""];
    for (const w of words) {
      if (lines.at(-1).length + w.length > 48 && lines.at(-1)) lines.push("");
      lines[lines.length - 1] += w;
    }
    return lines.join("<br>");
  }
  function drawNotes(notes) {
    document.getElementById("notes").replaceChildren(
      ...notes.map((n) => el("p", { class: "note" }, n)),
    );
  }

  // ---- filters and table ---------------------------------------------------------------------
  const FILTERS = [
    ["run", "run", (r) => state.runs[r.run].name],
    ["step", "step", (r) => String(r.step)],
    ["env", "environment", (r) => r.env],
    ["group", "group", (r) => r.group],
    ["success", "success", (r) => r.success],
    ["stop", "stop reason", (r) => r.stop],
    ["status", "trained / excluded", (r) => r.status],
  ];
  function buildFilters() {
    const box = document.getElementById("filters");
    const controls = FILTERS.map(([id, label, get]) => {
      const values = [...new Set(state.rows.map(get))].sort((a, b) =>
        id === "step" ? Number(a) - Number(b) : a < b ? -1 : a > b ? 1 : 0
      );
      if (id === "run" && state.runs.length < 2) return null;
      const sel = el(
        "select",
        { id: `f-${id}`, onchange: (ev) => setFilter(id, ev.target.value) },
        el("option", { value: "" }, "all"),
        values.map((v) => el("option", { value: v, selected: state.filters[id] === v }, v)),
      );
      return el("label", {}, label, sel);
    });
    const num = (id, label) =>
      el(
        "label",
        {},
        label,
        el("input", {
          id: `f-${id}`,
          type: "number",
          step: "any",
          size: 6,
          value: state.filters[id] ?? "",
          oninput: (ev) => setFilter(id, ev.target.value),
        }),
      );
    const sortSel = el(
      "select",
      { id: "f-sort", onchange: (ev) => (state.sort = ev.target.value, drawTable()) },
      ["step", "reward", "group", "turns", "adv"].map((s) =>
        el("option", { value: s, selected: state.sort === s }, s === "adv" ? "advantage" : s)
      ),
    );
    const desc = el("input", {
      id: "f-desc",
      type: "checkbox",
      checked: state.desc,
      onchange: (ev) => (state.desc = ev.target.checked, drawTable()),
    });
    const hasTeacher = state.runs.some((r) =>
      (r.episodes || []).some((e) =>
        (e.turns || []).some((t) => t.tokens && Array.isArray(t.tokens.teacher_logprobs))
      )
    );
    const modeSel = el(
      "select",
      { id: "f-mode", onchange: (ev) => (state.mode = ev.target.value, drawPanes()) },
      el("option", { value: "advantage", selected: state.mode === "advantage" }, "advantage"),
      hasTeacher
        ? el(
          "option",
          { value: "teacher", selected: state.mode === "teacher" },
          "teacher − student log-prob",
        )
        : null,
      el("option", { value: "logprob", selected: state.mode === "logprob" }, "sampler log-prob"),
    );
    const beside = el("input", { id: "f-beside", type: "checkbox" });
    box.replaceChildren(
      ...controls.filter(Boolean),
      num("rmin", "reward ≥"),
      num("rmax", "reward ≤"),
      el("label", {}, "sort by", sortSel),
      el("label", {}, "descending", desc),
      el("label", {}, "colour tokens by", modeSel),
      el("label", { title: "open the next episode in a second pane" }, "open beside", beside),
    );
  }
  function setFilter(id, v) {
    state.filters[id] = v;
    drawTable();
  }
  function filtered() {
    const f = state.filters;
    const rows = state.rows.filter((r) =>
      FILTERS.every(([id, , get]) => !f[id] || get(r) === f[id]) &&
      (f.rmin === undefined || f.rmin === "" || r.reward >= Number(f.rmin)) &&
      (f.rmax === undefined || f.rmax === "" || r.reward <= Number(f.rmax))
    );
    const k = state.sort;
    const val = (r) => r[k];
    rows.sort((a, b) => {
      const x = val(a), y = val(b);
      const c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
      return (state.desc ? -c : c) || a.run - b.run || a.step - b.step ||
        a.group.localeCompare(b.group) || (a.e.episode ?? 0) - (b.e.episode ?? 0) ||
        a.index - b.index;
    });
    return rows;
  }
  const MAX_ROWS = 500;
  /** With one step (of one run) filtered: whether it trained, and if not, why. */
  function stepWhy() {
    const L = lib();
    const f = state.filters;
    const run = state.runs.length === 1 ? 0 : state.runs.findIndex((r) => r.name === f.run);
    if (!L || !f.step || run < 0) return null;
    const recs = state.rows.filter((x) => x.run === run && String(x.step) === f.step)
      .map((x) => x.e);
    if (!recs.length) return null;
    const why = L.explainStep(recs);
    return el(
      "p",
      { id: "step-why", class: why ? "excluded" : "good" },
      why ? `step ${f.step} trained nothing: ${why}` : `step ${f.step} trained`,
    );
  }
  function drawTable() {
    const rows = filtered();
    const multi = state.runs.length > 1;
    const head = el(
      "tr",
      {},
      multi ? el("th", {}, "run") : null,
      [
        "step",
        "environment",
        "group",
        "ep",
        "reward",
        "success",
        "stop reason",
        "turns",
        "adv",
        "status",
      ].map((h) => el("th", {}, h)),
    );
    const open = (r) => {
      const beside = document.getElementById("f-beside");
      openEpisode(r.key, beside && beside.checked ? 1 : 0);
    };
    const body = rows.slice(0, MAX_ROWS).map((r) =>
      el(
        "tr",
        {
          "data-key": r.key,
          class: state.panes.includes(r.key) ? "selected" : null,
          onclick: () => open(r),
        },
        multi ? el("td", {}, state.runs[r.run].name) : null,
        el("td", {}, r.step),
        el("td", {}, r.env),
        el("td", {}, r.group),
        el("td", {}, r.e.episode ?? ""),
        el("td", {}, fmt(r.reward)),
        el("td", { class: r.success === "yes" ? "good" : null }, r.success),
        el("td", {}, r.stop),
        el("td", {}, r.turns),
        el("td", {}, fmt(r.adv)),
        el(
          "td",
          { class: r.status === "trained" ? null : r.status === "error" ? "bad" : "excluded" },
          r.status,
        ),
      )
    );
    const more = rows.length > MAX_ROWS
      ? el("p", { class: "note" }, `${rows.length - MAX_ROWS} more; narrow the filters`)
      : null;
    document.getElementById("table-wrap").replaceChildren(
      el(
        "p",
        { class: "note", id: "episode-count" },
        `${rows.length} of ${state.rows.length} episodes`,
      ),
      stepWhy(),
      el("table", { id: "episodes-table" }, el("thead", {}, head), el("tbody", {}, body)),
      ...(more ? [more] : []),
    );
  }

  // ---- the episode pane ----------------------------------------------------------------------
  function openEpisode(key, pane) {
    state.panes[pane] = key;
    drawPanes();
    drawTable();
    const r = state.rows.find((x) => x.key === key);
    // The address names the first pane's episode, so it can be copied or reloaded.
    if (r && pane === 0) history.replaceState(null, "", `#${fragmentOf(r)}`);
  }

  // ---- links: #run/step/group/episode ------------------------------------------------------
  const enc = (s) => encodeURIComponent(String(s));
  /** The fragment of an episode (or of its group: `upTo` 3, its step: 2, its run: 1). */
  function fragmentOf(r, upTo = 4) {
    const parts = [state.runs[r.run].name, r.step, r.group, r.e.episode ?? r.index];
    return parts.slice(0, upTo).map(enc).join("/");
  }
  function linkTo(r, upTo, text) {
    return el(
      "a",
      { href: `#${fragmentOf(r, upTo)}`, class: "link", title: "a link to this" },
      text,
    );
  }
  /** A button that copies the address of `r` (a text field to copy by hand when not allowed). */
  function copyLink(r) {
    const url = `${location.href.split("#")[0]}#${fragmentOf(r)}`;
    const b = el("button", {
      class: "copy-link",
      "data-url": url,
      title: url,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(url);
          b.textContent = "link copied";
        } catch {
          // file:// pages and some browsers refuse the clipboard: show the link to copy.
          const field = el("input", { class: "link-field", value: url, size: 40, readonly: true });
          b.replaceWith(field);
          field.select();
        }
      },
    }, "copy link");
    return b;
  }
  /**
   * Opens what the address's fragment names: `run` (its episodes), `run/step`, `run/step/group`
   * (its first episode, with the group above it) or `run/step/group/episode`; `charts` and
   * `episodes` pick a tab. A name not on the page is said so (live: kept until it lands).
   */
  function applyFragment() {
    const hash = decodeURIComponent(location.hash.replace(/^#/, ""));
    if (!hash) return;
    if (hash === "charts" || hash === "episodes") return showTab(hash);
    const parts = location.hash.replace(/^#/, "").split("/").map((p) => decodeURIComponent(p));
    const [runName, step, group, episode] = parts;
    const run = state.runs.findIndex((r) => r.name === runName);
    const rows = state.rows.filter((r) =>
      r.run === run && (step === undefined || String(r.step) === step) &&
      (group === undefined || r.group === group) &&
      (episode === undefined || String(r.e.episode ?? r.index) === episode)
    );
    showTab("episodes");
    if (rows.length === 0) {
      state.pending = hash;
      linkNote(
        data.live
          ? `link #${hash}: not on the page yet; it opens when it lands`
          : `link #${hash}: no such ${
            ["run", "step", "group", "episode"][Math.max(0, parts.length - 1)]
          } in this page`,
      );
      return;
    }
    state.pending = null;
    linkNote(null);
    state.filters = {};
    if (state.runs.length > 1) state.filters.run = runName;
    if (step !== undefined) state.filters.step = step;
    if (group !== undefined) state.filters.group = group;
    buildFilters();
    drawTable();
    if (group !== undefined) {
      rows.sort((a, b) => (a.e.episode ?? a.index) - (b.e.episode ?? b.index));
      state.panes[0] = rows[0].key;
      drawPanes();
      drawTable();
      document.getElementById("pane0").scrollIntoView({ block: "start" });
    }
  }
  function linkNote(text) {
    let p = document.getElementById("link-note");
    if (!text) return p && p.remove();
    if (!p) {
      document.getElementById("sec-episodes").prepend(
        p = el("p", { id: "link-note", class: "bad" }),
      );
    }
    p.textContent = text;
  }

  // ---- tabs ----------------------------------------------------------------------------------
  function showTab(name) {
    if (name === "charts" && state.figures.length === 0) name = "episodes";
    state.tab = name;
    for (const t of ["charts", "episodes"]) {
      document.getElementById(`sec-${t}`).hidden = t !== name;
      const b = document.getElementById(`tab-${t}`);
      if (b) b.classList.toggle("active", t === name);
    }
    if (name === "charts") drawCharts();
  }
  function buildTabs() {
    const nav = document.getElementById("tabs");
    const tab = (name, label) =>
      el("button", {
        id: `tab-${name}`,
        class: `tab${state.tab === name ? " active" : ""}`,
        onclick: () => {
          showTab(name);
          if (state.panes[0] === null) history.replaceState(null, "", `#${name}`);
        },
      }, label);
    nav.replaceChildren(
      state.figures.length ? tab("charts", `Charts (${state.figures.length})`) : null,
      tab("episodes", `Episodes (${state.rows.length})`),
    );
  }
  function drawPanes() {
    const box = document.getElementById("panes");
    box.replaceChildren(
      ...state.panes.map((key, i) => {
        if (key === null) return null;
        const r = state.rows.find((x) => x.key === key);
        if (!r) return null;
        return el(
          "div",
          { class: "pane", id: `pane${i}`, "data-key": key },
          el("button", {
            style: "float:right",
            onclick: () => (state.panes[i] = null, drawPanes(), drawTable()),
          }, "close"),
          episodeView(r),
        );
      }).filter(Boolean),
    );
  }
  function tokenValues(t, mode) {
    const tk = t.tokens;
    if (!tk || !Array.isArray(tk.text)) return null;
    if (mode === "teacher") {
      if (!Array.isArray(tk.teacher_logprobs)) return tk.text.map(() => null);
      return tk.text.map((_, i) =>
        typeof tk.teacher_logprobs[i] === "number" && typeof tk.logprobs[i] === "number"
          ? tk.teacher_logprobs[i] - tk.logprobs[i]
          : null
      );
    }
    if (mode === "logprob") return tk.text.map((_, i) => tk.logprobs ? tk.logprobs[i] : null);
    if (!Array.isArray(tk.advantages)) return tk.text.map(() => null);
    return tk.text.map((_, i) => tk.advantages[i] ?? null);
  }
  /** Red for negative, blue for positive, by |v| / bound; white at 0. */
  function colour(v, bound) {
    if (v === null || !Number.isFinite(v)) return "transparent";
    const a = Math.min(1, Math.abs(v) / bound);
    const [r, g, b] = v < 0 ? [178, 24, 43] : [33, 102, 172];
    return `rgba(${r},${g},${b},${(0.08 + 0.72 * a).toFixed(3)})`;
  }
  function messageView(m, cls) {
    if (!m || typeof m !== "object") return null;
    const calls = Array.isArray(m.toolCalls) ? m.toolCalls : [];
    return el(
      "div",
      { class: `msg ${m.role || ""} ${cls || ""}` },
      el(
        "div",
        { class: "role" },
        m.role || "?",
        m.toolCallId ? ` (answer to ${m.toolCallId})` : "",
      ),
      m.thinking ? el("div", { class: "meta" }, "thinking: ", m.thinking) : null,
      m.content === "" && calls.length ? null : m.content,
      calls.map((c) =>
        el(
          "div",
          { class: "toolcall" },
          el("b", {}, "tool call "),
          `${c.name}(${JSON.stringify(c.arguments)})`,
          c.id ? el("span", { class: "meta" }, ` id ${c.id}`) : null,
        )
      ),
    );
  }
  function tokensView(t, values, bound) {
    const tk = t.tokens;
    const trained = !t.score || t.score.trained !== false;
    return el(
      "div",
      { class: "tokens msg assistant" },
      el("div", { class: "role" }, "assistant: sampled tokens"),
      tk.text.map((s, i) => {
        const v = values[i];
        const lp = tk.logprobs ? tk.logprobs[i] : null;
        const teacher = Array.isArray(tk.teacher_logprobs) ? tk.teacher_logprobs[i] : null;
        const adv = Array.isArray(tk.advantages) ? tk.advantages[i] : null;
        const title = [
          `token ${i}: ${JSON.stringify(s)}`,
          `${state.mode === "teacher" ? "teacher − student" : state.mode}: ${fmt(v, 4)}`,
          `advantage ${adv === null ? "none (not trained)" : fmt(adv, 4)}`,
          `sampler log-prob ${fmt(lp, 4)}`,
          teacher !== null && teacher !== undefined ? `teacher log-prob ${fmt(teacher, 4)}` : null,
        ].filter(Boolean).join("\n");
        return el("span", {
          class: `tok${trained ? "" : " untrained"}`,
          "data-v": v === null ? "" : v,
          title,
          style: `background:${colour(v, bound)}`,
        }, s);
      }),
    );
  }
  function evidenceView(ev) {
    if (!ev || typeof ev !== "object") return null;
    const parts = [];
    if (ev.prm) {
      parts.push(el(
        "div",
        {},
        el("b", {}, "PRM judge: "),
        `score ${fmt(ev.prm.score)}, votes [${
          (ev.prm.votes || []).map((v) => v === null ? "invalid" : v).join(", ")
        }]`,
        ev.prm.representative ? el("div", { class: "msg" }, ev.prm.representative) : null,
      ));
    }
    if ("hint" in ev) {
      parts.push(el(
        "div",
        {},
        el("b", {}, "hint: "),
        ev.hint === null ? "none accepted" : el("span", { class: "msg" }, ev.hint),
        Array.isArray(ev.hint_decisions)
          ? ` (judge decisions [${
            ev.hint_decisions.map((v) => v === null ? "invalid" : v).join(", ")
          }])`
          : null,
      ));
    }
    for (const err of ev.errors || []) parts.push(el("div", { class: "bad" }, "error: ", err));
    return parts.length ? el("div", { class: "evidence meta" }, parts) : null;
  }
  // ---- why nothing trained, and what-if (the library's own functions, bundled) ---------------
  const lib = () => globalThis.tinkerbench || null;
  function stepRecords(r) {
    return state.rows.filter((x) => x.run === r.run && x.step === r.step).map((x) => x.e);
  }
  function groupRecords(r) {
    return state.rows.filter((x) => x.run === r.run && x.step === r.step && x.group === r.group)
      .map((x) => x.e);
  }
  /** Why the step and the episode's group trained nothing (lib/advantages/untrained.ts). */
  function whyView(r) {
    const L = lib();
    if (!L) return null;
    const step = L.explainStep(stepRecords(r));
    const group = L.explainGroup(groupRecords(r));
    return el(
      "section",
      { class: "why" },
      step
        ? el("p", { class: "excluded why-step" }, `step ${r.step} trained nothing: ${step}`)
        : null,
      group
        ? el("p", { class: "excluded why-group" }, `group ${r.group} trained nothing: ${group}`)
        : null,
    );
  }
  function clone(x) {
    return JSON.parse(JSON.stringify(x));
  }
  /** The settings the what-if form edits, for the run of `r` (the run's own to start). */
  function whatIfSettings(r) {
    const run = state.runs[r.run];
    if (!state.whatif[r.run]) state.whatif[r.run] = clone(run.settings.scoring);
    return state.whatif[r.run];
  }
  function whatIfView(r) {
    const run = state.runs[r.run];
    const L = lib();
    // Episodes held in memory (a notebook's) have no run settings to start from.
    if (!run.settings) return null;
    const box = el("details", { class: "whatif", open: state.whatifOpen || null });
    box.addEventListener("toggle", () => (state.whatifOpen = box.open));
    box.append(el("summary", {}, "what if: re-score this group with other settings"));
    if (!L) {
      box.append(el(
        "p",
        { class: "note" },
        "The library's browser bundle (tinkerbench.js, in the assets folder) did not load.",
      ));
      return box;
    }
    const s = whatIfSettings(r);
    const result = el("div", { class: "whatif-result" });
    const redraw = () => result.replaceChildren(...whatIfResult(r, s));
    const num = (v) => v === "" ? null : Number(v);
    const field = (id, label, value, set, attrs = {}) =>
      el(
        "label",
        {},
        label,
        el("input", {
          id: `wi-${id}`,
          type: "number",
          step: "any",
          size: 6,
          value: value ?? "",
          placeholder: "none",
          ...attrs,
          onchange: (ev) => (set(ev.target.value), redraw()),
        }),
      );
    const choice = (id, label, options, value, set) =>
      el(
        "label",
        {},
        label,
        el(
          "select",
          { id: `wi-${id}`, onchange: (ev) => (set(ev.target.value), redraw()) },
          options.map((o) => el("option", { value: o, selected: o === value }, o)),
        ),
      );
    const a = s.advantages;
    box.append(
      el(
        "div",
        { class: "whatif-form" },
        choice("method", "method", ["rl", "opd", "combine"], s.method, (v) => s.method = v),
        choice(
          "reward-source",
          "reward source",
          ["env", "success", "prm"],
          s.rewardSource,
          (v) => s.rewardSource = v,
        ),
        choice("mode", "advantage mode", L.advantageModes, a.mode, (v) => a.mode = v),
        field("gamma", "γ (discounted)", a.gamma, (v) => a.gamma = Number(v), { min: 0, max: 1 }),
        choice(
          "constant-groups",
          "constant groups",
          ["keep", "drop", "drop_keep_one"],
          a.constantGroups,
          (v) => a.constantGroups = v,
        ),
        field(
          "downsample-to",
          "down-sample to",
          a.downsampleTo,
          (v) => a.downsampleTo = num(v),
          { min: 2, step: 1 },
        ),
        choice(
          "reduction",
          "reward reduction",
          L.rewardReductions,
          a.rewardReduction,
          (v) => a.rewardReduction = v,
        ),
        field(
          "non-final",
          "non-final turn reward",
          a.nonFinalTurnReward,
          (v) => a.nonFinalTurnReward = num(v),
        ),
        field("clamp-min", "clamp ≥", a.clampMin, (v) => a.clampMin = num(v)),
        field("clamp-max", "clamp ≤", a.clampMax, (v) => a.clampMax = num(v)),
        field("w-opd", "w opd", s.wOpd, (v) => s.wOpd = Number(v)),
        field("w-rl", "w rl", s.wRl, (v) => s.wRl = Number(v)),
        field("kl", "KL coef", s.klCoef, (v) => s.klCoef = Number(v), { min: 0 }),
        el("button", {
          id: "wi-reset",
          onclick: () => {
            state.whatif[r.run] = clone(run.settings.scoring);
            drawPanes();
          },
        }, "the run's settings"),
      ),
      el(
        "p",
        { class: "meta" },
        `loss ${run.settings.loss.fn}${
          Object.keys(run.settings.loss.config).length
            ? ` ${JSON.stringify(run.settings.loss.config)}`
            : ""
        }: the records keep the sampler's log-probs only, so each token's ratio is 1 at the ` +
          "step's first pass (inside any clip range around 1), and its gradient weight is its " +
          "advantage whatever the clip or ratio settings.",
      ),
      result,
    );
    redraw();
    return box;
  }
  function whatIfResult(r, settings) {
    let w;
    try {
      w = lib().whatIf(stepRecords(r), r.group, clone(settings));
    } catch (err) {
      return [el("p", { class: "bad", id: "wi-error" }, String(err.message || err))];
    }
    const delta = w.weightAfter - w.weightBefore;
    const pct = w.weightBefore
      ? ` (${delta >= 0 ? "+" : ""}${fmt(100 * delta / w.weightBefore, 1)}%)`
      : "";
    const turnsOf = (xs) => xs.map((x) => fmt(x)).join(" ");
    const mine = w.episodes.find((e) => e.episode === r.e.episode);
    const tokens = mine ? whatIfTokens(r, mine) : null;
    return [
      el(
        "p",
        { id: "wi-weight", "data-before": w.weightBefore, "data-after": w.weightAfter },
        el("b", {}, "group's total gradient weight Σ|advantage|: "),
        `as trained ${fmt(w.weightBefore)} → what-if ${fmt(w.weightAfter)}, change ` +
          `${delta >= 0 ? "+" : ""}${fmt(delta)}${pct}`,
      ),
      el(
        "p",
        { class: w.untrained ? "excluded" : "good", id: "wi-untrained" },
        w.untrained
          ? `with these settings the group trains nothing: ${w.untrained}`
          : "with these settings the group trains",
      ),
      el(
        "table",
        { class: "whatif-episodes" },
        el(
          "tr",
          {},
          ["ep", "reward", "RL adv per turn: as trained", "what-if", "Σ|A| trained", "what-if"].map(
            (h) => el("th", {}, h),
          ),
        ),
        w.episodes.map((e) =>
          el(
            "tr",
            { class: e.episode === r.e.episode ? "selected" : null },
            el("td", {}, e.episode),
            el("td", {}, fmt(e.totalReward)),
            el("td", {}, turnsOf(e.rlBefore)),
            el("td", {}, turnsOf(e.rlAfter) + (e.downsampled ? " (down-sampled)" : "")),
            el("td", {}, fmt(sumAbs(e.before))),
            el("td", {}, fmt(sumAbs(e.after))),
          )
        ),
      ),
      tokens,
    ];
  }
  function sumAbs(turns) {
    return turns.reduce((n, t) => n + (t || []).reduce((m, x) => m + Math.abs(x), 0), 0);
  }
  /** This episode's tokens, each turn twice: coloured by the run's advantage and the what-if's. */
  function whatIfTokens(r, w) {
    const turns = r.e.turns || [];
    const all = [...w.before, ...w.after].flatMap((t) => t || []);
    const bound = Math.max(1e-6, ...all.map(Math.abs));
    const row = (t, i, which, values) =>
      el(
        "div",
        { class: "tokens whatif-tokens", "data-which": which, "data-turn": i },
        el("span", { class: "role" }, which === "before" ? "as trained: " : "what-if: "),
        (t.tokens.text || []).map((s, k) => {
          const v = values ? values[k] : null;
          return el("span", {
            class: `tok${values ? "" : " untrained"}`,
            "data-v": v === null || v === undefined ? "" : v,
            title: `token ${k}: ${JSON.stringify(s)}\n${
              which === "before" ? "as trained" : "what-if"
            }: ${values ? fmt(v, 4) : "not trained"}`,
            style: `background:${colour(v ?? null, bound)}`,
          }, s);
        }),
      );
    return el(
      "div",
      { class: "whatif-tokens-box" },
      el(
        "p",
        { class: "meta" },
        `episode ${r.e.episode ?? "?"}, per token (scale ±${fmt(bound)}):`,
      ),
      turns.map((t, i) =>
        t.tokens && Array.isArray(t.tokens.text)
          ? el(
            "div",
            { class: "wi-turn" },
            el("div", { class: "meta" }, `turn ${i}`),
            row(t, i, "before", w.before[i]),
            row(t, i, "after", w.after[i]),
          )
          : null
      ),
    );
  }

  function groupView(r) {
    const members = state.rows.filter((x) =>
      x.run === r.run && x.step === r.step && x.group === r.group
    ).sort((a, b) => (a.e.episode ?? 0) - (b.e.episode ?? 0));
    const rewards = members.map((m) => m.reward);
    const constant = rewards.every((x) => x === rewards[0]);
    const why = excludedReason(r.e);
    return el(
      "details",
      { class: "group", open: true },
      el(
        "summary",
        {},
        `group ${r.group}: ${members.length} episodes, rewards ${
          rewards.map((x) => fmt(x)).join(", ")
        }`,
        constant ? " (constant: no signal for a group baseline)" : "",
        " ",
        linkTo(r, 3, "link"),
      ),
      why ? el("p", { class: "excluded" }, "excluded: ", why) : null,
      el(
        "table",
        {},
        el(
          "tr",
          {},
          [
            "ep",
            "reward",
            "success",
            "stop",
            "RL adv per turn",
            "mean token adv",
            "trained turns",
            "status",
          ]
            .map((h) => el("th", {}, h)),
        ),
        members.map((m) =>
          el(
            "tr",
            {
              class: m.key === r.key ? "selected" : null,
              style: "cursor:pointer",
              onclick: () => openEpisode(m.key, state.panes.indexOf(r.key) === 1 ? 1 : 0),
            },
            el("td", {}, m.e.episode ?? ""),
            el("td", {}, fmt(m.reward)),
            el("td", {}, m.success),
            el("td", {}, m.stop),
            el(
              "td",
              {},
              (m.e.turns || []).map((t) => fmt(t.score && t.score.rl_advantage)).join(" "),
            ),
            el("td", {}, fmt(m.adv)),
            el("td", {}, (m.e.turns || []).filter((t) => t.score && t.score.trained).length),
            el("td", {}, m.status),
          )
        ),
      ),
    );
  }
  function episodeView(r) {
    const e = r.e;
    const run = state.runs[r.run];
    const turns = e.turns || [];
    const all = turns.flatMap((t) => tokenValues(t, state.mode) || []);
    const finite = all.filter((v) => v !== null && Number.isFinite(v));
    const bound = Math.max(1e-6, ...finite.map(Math.abs));
    return el(
      "div",
      { class: "episode" },
      el(
        "h3",
        {},
        `${run.name} · `,
        linkTo(r, 2, `step ${r.step}`),
        " · ",
        linkTo(r, 3, r.group),
        " · ",
        linkTo(r, 4, `episode ${e.episode ?? "?"}`),
        " ",
        copyLink(r),
      ),
      el(
        "p",
        { class: "meta" },
        `${r.env}${run.method ? ` · ${run.method}` : ""}${run.model ? ` · ${run.model}` : ""} · ` +
          `reward ${fmt(r.reward)} · success ${r.success} · stop ${r.stop} · ${r.status}`,
      ),
      e.error ? el("p", { class: "bad" }, "episode error: ", String(e.error)) : null,
      whyView(r),
      groupView(r),
      whatIfView(r),
      el(
        "p",
        { class: "meta legend" },
        `tokens coloured by ${
          state.mode === "teacher" ? "teacher − student log-prob" : state.mode
        }: `,
        fmt(-bound),
        " ",
        el("span", { class: "legend-bar" }),
        " ",
        fmt(bound),
        " (hover a token for its values; grey text: not trained)",
      ),
      turns.map((t, i) => {
        const values = tokenValues(t, state.mode);
        const s = t.score || {};
        // The RL term's reward (a version 2 record called it `reward`), shown where it differs.
        const rl = s.rl_reward ?? s.reward;
        return el(
          "div",
          { class: "turn", "data-turn": i },
          el(
            "div",
            { class: "meta" },
            `turn ${i} · reward ${fmt(t.reward)}` +
              (rl !== undefined && rl !== t.reward ? ` · RL reward ${fmt(rl)}` : "") +
              ` · ${t.ac_tokens ?? "?"} action tokens ` +
              `(${t.stop_reason || "?"}) · sampler v${t.sampler_version ?? "?"} · ` +
              `RL advantage ${fmt(s.rl_advantage)}` +
              (s.opd_mean !== undefined ? ` · OPD mean ${fmt(s.opd_mean)}` : "") +
              (s.dispatch ? ` · dispatch ${s.dispatch}` : "") +
              (s.trained === false ? " · not trained" : ""),
          ),
          (t.observation || []).map((m) => messageView(m, "observation")),
          values ? tokensView(t, values, bound) : null,
          values && (!t.action || !(t.action.toolCalls || []).length) &&
            !(t.action && t.action.thinking)
            ? null
            : messageView(t.action, "action"),
          evidenceView(t.evidence),
          (t.next_state || []).map((m) => messageView(m, "next")),
        );
      }),
    );
  }

  // ---- live updates --------------------------------------------------------------------------
  function setLastStep() {
    state.lastStep = Math.max(0, ...state.runs.map((r) => r.steps || 0));
  }
  async function poll() {
    try {
      const res = await fetch(`data.json?after=${state.lastStep}`, { cache: "no-store" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const next = await res.json();
      next.runs.forEach((run, i) => {
        const old = state.runs[i];
        const known = new Set(
          (old.episodes || []).map((e) => `${e.step}/${e.group_id}/${e.episode}`),
        );
        const fresh = run.episodes.filter((e) =>
          !known.has(`${e.step}/${e.group_id}/${e.episode}`)
        );
        old.episodes = (old.episodes || []).concat(fresh);
        Object.assign(old, { steps: run.steps, evaluation: run.evaluation });
      });
      document.getElementById("title").textContent = next.title;
      document.title = next.title;
      drawNotes(next.notes);
      const grew = next.runs.some((r, i) => r.steps !== state.lastSteps[i]);
      state.lastSteps = next.runs.map((r) => r.steps);
      state.figures = next.figures;
      if (grew) {
        state.rows = indexEpisodes(state.runs);
        setLastStep();
        drawCharts();
        buildTabs();
        buildFilters();
        drawTable();
        if (state.pending) applyFragment();
      }
      liveBadge(`live: ${state.lastStep} steps, checked ${new Date().toLocaleTimeString()}`);
    } catch (err) {
      liveBadge(`live: cannot reach the server (${err.message}); retrying`);
    }
    setTimeout(poll, 2000);
  }
  function liveBadge(text) {
    let b = document.getElementById("live");
    if (!b) document.body.append(b = el("div", { id: "live" }));
    b.textContent = text;
    b.dataset.steps = String(state.lastStep);
  }

  // ---- start ---------------------------------------------------------------------------------
  state.rows = indexEpisodes(state.runs);
  state.lastSteps = state.runs.map((r) => r.steps);
  setLastStep();
  drawNotes(data.notes);
  state.tab = state.figures.length && !location.hash.replace(/^#(charts)?/, "")
    ? "charts"
    : "episodes";
  buildTabs();
  showTab(state.tab);
  buildFilters();
  drawTable();
  applyFragment();
  addEventListener("hashchange", applyFragment);
  if (state.rows.length === 0) {
    document.getElementById("panes").append(
      el("p", { class: "note" }, "No episodes recorded yet (rollouts/iteration_*.jsonl)."),
    );
  }
  if (data.live) {
    liveBadge(`live: ${state.lastStep} steps`);
    setTimeout(poll, 2000);
  }
  document.body.dataset.ready = "true";
})();
