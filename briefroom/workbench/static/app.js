// The workbench page. Text from runs goes in with textContent; the report's HTML is the
// run page's own rendering (briefroom/runpage.py escapes everything a run wrote).
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, text, cls) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
};
let current = null;   // the open run's name
let stream = null;    // its EventSource
let sections = {};    // agent -> section -> tokens, from the model calls seen

function showError(message) {
  const box = $("#error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({error: `${response.status} ${response.statusText}`}));
  if (!response.ok) throw new Error(data.error || `${response.status}`);
  showError("");
  return data;
}

function tab(name) {
  document.querySelectorAll(".tab").forEach((t) => { t.hidden = t.id !== `tab-${name}`; });
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("on", b.dataset.tab === name));
  if (name === "runs" || name === "compare") loadRuns().catch((e) => showError(e.message));
  if (name === "jobs") loadJobs().catch((e) => showError(e.message));
}

// --- start ---------------------------------------------------------------------------
async function loadConfig() {
  const config = await api("/api/config");
  const select = $("#corpus");
  const none = el("option", "none (the web only)");
  none.value = "";
  select.replaceChildren(...config.folders.map((f) => { const o = el("option", f); o.value = f; return o; }), none);
  $("#model").value = config.model;
  $("#config").textContent = `corpus root ${config.corpus_root} · runs in ${config.runs_dir} · data ` +
    `${config.data_dir}` + (config.endpoint ? " · endpoint configured" : "") +
    (config.database ? " · database configured" : "");
}

async function start(event) {
  event.preventDefault();
  const number = (id) => ($(id).value ? Number($(id).value) : null);
  try {
    const live = await api("/api/runs", {
      question: $("#question").value, corpus: $("#corpus").value || null, web: $("#web").checked,
      model: $("#model").value || null,
      rounds: number("#rounds") || 3, max_tokens: number("#max-tokens"), parallel: number("#parallel"),
      memory: $("#memory").checked, review_plan: $("#review-plan").checked, clarify: $("#clarify").checked});
    openRun(live.name);
  } catch (e) { showError(e.message); }
}

// --- one run, live ---------------------------------------------------------------------
function openRun(name) {
  current = name;
  tab("run");
  $("#run-title").textContent = name;
  $("#run-page").href = `/runs/${encodeURIComponent(name)}/page`;
  $("#run-page").hidden = false;
  // nothing of the run shown before may stay on screen for this one
  $("#status").textContent = "opening";
  $("#status").dataset.status = "";
  $("#progress").textContent = "";
  setBudget(0, null);
  $("#report").replaceChildren();
  $("#report-box").dataset.run = "";
  $("#passage").replaceChildren(el("p", "no citation opened", "dim"));
  $("#report-box").hidden = true;
  $("#draft-box").hidden = true;
  $("#review").hidden = true;
  $("#find-question").hidden = true;
  follow();
}

function follow() {
  if (stream) stream.close();
  stream = new EventSource(`/api/runs/${encodeURIComponent(current)}/events`);
  stream.addEventListener("reset", () => {
    $("#board").replaceChildren(); sections = {}; drawSections(); $("#draft").textContent = "";
  });
  stream.addEventListener("log", (m) => logLine(JSON.parse(m.data)));
  stream.addEventListener("state", (m) => showState(JSON.parse(m.data)));
  stream.addEventListener("end", (m) => { stream.close(); stream = null; showState(JSON.parse(m.data), true); });
}

function logLine(line) {
  if (line.kind === "message") {
    const item = el("li");
    item.dataset.type = line.type;
    item.append(el("span", `r${line.round} `, "dim"), el("span", line.from, "who"), " → ",
                el("span", (line.to || []).join(", ") || "-"), " ", el("span", line.type, "type"), ": ",
                el("span", line.text.slice(0, 300)));
    $("#board").append(item);
    item.scrollIntoView({block: "nearest"});
    if (line.type === "report") showDraft(line);
  } else if (line.kind === "call") {
    const mine = sections[line.agent] = sections[line.agent] || {};
    for (const [name, tokens] of Object.entries(line.sections)) mine[name] = (mine[name] || 0) + tokens;
    mine["(reply)"] = (mine["(reply)"] || 0) + line.completion_tokens;
    drawSections();
  } else if (line.kind === "review" && line.after) {
    $("#board").append(el("li", `plan review: ${line.accepted ? "accepted" : "changed"} → ` +
                              line.after.map((t) => `${t.task_id} ${t.question}`).join(" | "), "ok"));
  } else if (line.kind === "end") {
    setBudget(line.tokens_used, line.budget);
  } else if (line.kind === "error") {
    $("#board").append(el("li", `error: ${line.message}`, "bad"));
  } else if (line.kind === "budget") {
    $("#board").append(el("li", `${line.event}: ${line.detail}`, "dim"));
  }
}

// The Writer's latest draft, as it is sent to the Critic: on screen before the run ends.
function showDraft(line) {
  $("#draft").textContent = line.text;
  $("#draft-note").textContent = `(round ${line.round}, ${line.id}: ${$("#report-box").hidden ?
    "being checked" : "the report below is the accepted one"})`;
  $("#draft-box").hidden = !$("#report-box").hidden;
}

function drawSections() {
  const agents = Object.keys(sections).sort();
  const names = [...new Set(agents.flatMap((a) => Object.keys(sections[a])))].sort();
  const table = $("#sections");
  const head = el("tr");
  head.append(el("th", "agent"), ...names.map((n) => el("th", n)));
  const rows = agents.map((a) => {
    const row = el("tr");
    row.append(el("td", a), ...names.map((n) => el("td", sections[a][n] || 0)));
    return row;
  });
  table.replaceChildren(head, ...rows);
  $("#agents").replaceChildren(...agents.map((a) => el("li", `${a}: ` +
    Object.values(sections[a]).reduce((x, y) => x + y, 0).toLocaleString() + " tokens")));
}

function setBudget(used, budget) {
  const bar = $("#budget");
  bar.querySelector("i").style.width = budget ? `${Math.min(100, (100 * used) / budget)}%` : "0";
  bar.querySelector("span").textContent = `${used.toLocaleString()}` + (budget ? ` of ${budget.toLocaleString()}` : "") +
    " tokens";
}

function showState(state, ended) {
  const status = state.waiting_for ? "waiting" : state.status;
  $("#status").textContent = status;
  $("#status").dataset.status = status;
  const p = (state.progress || [])[0];
  if (p) {
    $("#progress").textContent = `round ${p.round} · ${p.agent} · ${p.step} · ${p.elapsed_s}s`;
    setBudget(p.tokens_used, p.max_tokens);
  }
  $("#stop").hidden = status !== "running";
  if (state.error) showError(state.error);
  if (state.waiting_for) showReview(state.waiting_for);
  else $("#review").hidden = true;
  $("#find-question").hidden = !(ended && state.status === "paused" && !state.waiting_for);
  if (state.report_ready) loadReport();
}

// --- answering the run's question -------------------------------------------------------
function showReview(request) {
  const box = $("#review");
  if (!box.hidden && box.dataset.kind === request.kind && box.dataset.error === String(request.error)) return;
  box.hidden = false;
  box.dataset.kind = request.kind;
  box.dataset.error = String(request.error);
  const plan = request.kind === "plan_review";
  $("#review-title").textContent = plan ? `The plan (round ${request.round}): accept it, or change it` :
    "The Planner asks first";
  $("#review-goal").textContent = request.goal;
  $("#review-error").hidden = !request.error;
  $("#review-error").textContent = request.error ? `Your last answer was refused: ${request.error}` : "";
  $("#review-add-box").hidden = $("#review-note-box").hidden = !plan;
  $("#review-add").value = $("#review-note").value = "";
  const items = plan ? request.tasks.map((t) => {
    const item = el("li");
    const text = el("input");
    text.type = "text"; text.value = t.question; text.dataset.task = t.task_id; text.dataset.was = t.question;
    const drop = el("input");
    drop.type = "checkbox"; drop.dataset.drop = t.task_id;
    const label = el("label", " drop", "check");
    label.prepend(drop);
    item.append(el("code", `${t.task_id} `), text, " ", label);
    return item;
  }) : request.questions.map((q, i) => {
    const item = el("li", q);
    const answer = el("input");
    answer.type = "text"; answer.dataset.answer = String(i);
    item.append(el("br"), answer);
    return item;
  });
  $("#review-tasks").replaceChildren(...items);
  $("#review-submit").textContent = plan ? "Send my changes" : "Send my answers";
  $("#review-accept").textContent = plan ? "Accept the plan" : "Answer none";
}

function reviewAnswer() {
  if ($("#review").dataset.kind !== "plan_review") {
    return {answers: [...document.querySelectorAll("#review-tasks [data-answer]")].map((i) => i.value)};
  }
  const answer = {edit: {}, drop: [], add: $("#review-add").value.split("\n").filter((l) => l.trim())};
  document.querySelectorAll("#review-tasks [data-task]").forEach((input) => {
    if (input.value !== input.dataset.was) answer.edit[input.dataset.task] = input.value;
  });
  document.querySelectorAll("#review-tasks [data-drop]").forEach((box) => {
    if (box.checked) answer.drop.push(box.dataset.drop);
  });
  if ($("#review-note").value.trim()) answer.note = $("#review-note").value;
  const changed = Object.keys(answer.edit).length || answer.drop.length || answer.add.length || answer.note;
  return changed ? answer : {accept: true};
}

async function sendAnswer(answer) {
  try {
    await api(`/api/runs/${encodeURIComponent(current)}/answer`, answer);
    $("#review").hidden = true;
    follow();
  } catch (e) { showError(e.message); }
}

// --- the report, each citation opening its passage ----------------------------------------
async function loadReport() {
  if (!$("#report-box").hidden && $("#report-box").dataset.run === current) return;
  const report = await api(`/api/runs/${encodeURIComponent(current)}/report`);
  $("#report").innerHTML = report.html;
  $("#report-box").dataset.run = current;
  $("#report-box").hidden = false;
  $("#draft-box").hidden = true;  // the accepted report replaces the draft
}

function openCitation(event) {
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  const target = document.getElementById(link.getAttribute("href").slice(1));
  const panel = $("#passage");
  if (!target || !target.classList.contains("passage")) {
    panel.replaceChildren(el("p", `citation ${link.textContent} lands on no passage`, "bad"));
    return;
  }
  const source = target.closest("section.source");
  const heading = el("h4", source ? source.querySelector("h3").textContent : "");
  panel.replaceChildren(el("p", `citation ${link.textContent}`, "dim"), heading, target.cloneNode(true));
  panel.querySelector("blockquote").removeAttribute("id");
}

// --- past runs, compare, memory, jobs -------------------------------------------------------
async function loadRuns() {
  const {runs} = await api("/api/runs");
  const head = el("tr");
  head.append(...["run", "status", "round", "question", "report"].map((h) => el("th", h)));
  const rows = runs.map((r) => {
    const row = el("tr", null, "pick");
    row.dataset.run = r.name;
    row.append(el("td", r.name), el("td", r.status), el("td", `${r.round ?? "-"}/${r.max_rounds ?? "-"}`),
               el("td", r.question || ""), el("td", r.report ? "yes" : "-"));
    row.addEventListener("click", () => openRun(r.name));
    return row;
  });
  $("#runs-list").replaceChildren(head, ...rows);
  for (const id of ["#compare-a", "#compare-b"]) {
    const keep = $(id).value;
    $(id).replaceChildren(...runs.map((r) => { const o = el("option", r.name); o.value = r.name; return o; }));
    if (keep) $(id).value = keep;
  }
  // two different runs to start with: the newest and the one before it
  if ($("#compare-a").value === $("#compare-b").value && runs.length > 1) {
    $("#compare-b").value = runs.find((r) => r.name !== $("#compare-a").value).name;
  }
}

async function compare() {
  try {
    const a = $("#compare-a").value, b = $("#compare-b").value;
    const data = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    $("#compare-out").replaceChildren(...data.runs.map((side) => {
      const box = el("div");
      const table = el("table");
      for (const [k, v] of Object.entries(side.numbers)) {
        const row = el("tr");
        row.append(el("th", k), el("td", v));
        table.append(row);
      }
      const report = el("div");
      report.innerHTML = side.html;
      box.append(el("h3", side.name), el("p", side.question), table, report);
      return box;
    }));
  } catch (e) { showError(e.message); }
}

async function loadMemory() {
  try {
    const zone = $("#memory-zone").value;
    const data = await api(`/api/memory${zone ? `?zone=${encodeURIComponent(zone)}` : ""}`);
    $("#memory-ns").textContent = `namespace ${data.namespace} (scope ${data.scope}): ${data.items.length} memories`;
    $("#memory-list").replaceChildren(...data.items.map((item) => {
      const row = el("li");
      const forget = el("button", "forget");
      forget.addEventListener("click", async () => {
        try { await api("/api/memory/forget", {id: item.id}); await loadMemory(); } catch (e) { showError(e.message); }
      });
      row.append(el("code", `${item.id} · ${item.zone}${item.status ? ` [${item.status}]` : ""} `), forget,
                 el("div", item.text));
      return row;
    }));
  } catch (e) { showError(e.message); }
}

async function loadJobs() {
  const data = await api("/api/jobs");
  const out = $("#jobs-out");
  if (!data.configured) { out.replaceChildren(el("p", data.message, "dim")); return; }
  const head = el("tr");
  head.append(...["job", "status", "question", "attempts", "run", "run status", "reason"].map((h) => el("th", h)));
  const table = el("table");
  table.append(head, ...data.jobs.map((j) => {
    const row = el("tr");
    row.append(...[j.id, j.status, j.question, j.attempts, j.run_dir || "-", j.run_status || "-", j.reason || ""]
      .map((v) => el("td", v)));
    return row;
  }));
  out.replaceChildren(table);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => tab(b.dataset.tab)));
  $("#start-form").addEventListener("submit", start);
  $("#review-accept").addEventListener("click", () => sendAnswer({accept: true}));
  $("#review-submit").addEventListener("click", () => sendAnswer(reviewAnswer()));
  $("#stop").addEventListener("click", () => api(`/api/runs/${encodeURIComponent(current)}/stop`, {})
    .catch((e) => showError(e.message)));
  $("#find-question").addEventListener("click", () => api(`/api/runs/${encodeURIComponent(current)}/question`, {})
    .then(follow).catch((e) => showError(e.message)));
  $("#report").addEventListener("click", openCitation);
  $("#compare-go").addEventListener("click", compare);
  $("#memory-load").addEventListener("click", loadMemory);
  loadConfig().catch((e) => showError(e.message));
});
