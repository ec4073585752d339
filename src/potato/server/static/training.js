// The training page (/admin/training): start a run, check a backend, and follow runs live.
// The runs table is polled every second while any run is unfinished (every 5 s otherwise); the
// selected run's detail panel shows its step line, progress, holdout score, log tail and a loss
// curve drawn as inline SVG from the run's progress events, fetched incrementally with ?after=.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var root = $("training");
  var BASE = root.dataset.base.replace(/\/?$/, "/");
  var TERMINAL = ["succeeded", "failed", "cancelled"];
  var FAST_MS = 1000, SLOW_MS = 5000;
  var SVG_NS = "http://www.w3.org/2000/svg", W = 600, H = 200, PAD = { l: 52, r: 14, t: 14, b: 30 };
  var state = { runs: [], selected: null, detailDone: false, events: null, timer: null, polling: false, again: false,
                curveFrom: null, curve: null, alFrom: null };

  function api(path) { return BASE + "api/" + path; }
  function runApi(id, rest) { return api("runs/" + encodeURIComponent(id) + (rest || "")); }
  function isTerminal(run) { return TERMINAL.indexOf(run.state) >= 0; }
  function find(id) { return state.runs.filter(function (r) { return r.id === id; })[0] || null; }
  function setText(el, text) { text = text == null ? "" : String(text); if (el.textContent !== text) el.textContent = text; }
  function fmtScore(x) { return typeof x === "number" ? x.toFixed(2) : "—"; }
  function fmtTime(ts) { return ts ? new Date(ts * 1000).toLocaleString() : "—"; }
  function fmtShort(ts) {
    return ts ? new Date(ts * 1000).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }) : "—";
  }
  function fmtNum(x) { return Math.abs(x) >= 100 ? x.toFixed(0) : String(Number(x.toPrecision(3))); }
  function pct(x) { return Math.round(x * 100) + "%"; }

  // A server message marks a command it names with backticks (the CLI prints them as they are); the
  // page sets it as code instead. Each line of ``text`` stays a line.
  function setCodeText(el, text) {
    text = text == null ? "" : String(text);
    if (el.dataset.text === text) return;
    el.dataset.text = text;
    el.textContent = "";
    text.split("\n").forEach(function (line, i) {
      if (i) el.appendChild(document.createTextNode("\n"));
      var parts = line.split("`");
      if (parts.length % 2 === 0) { el.appendChild(document.createTextNode(line)); return; } // unpaired: as it is
      parts.forEach(function (part, j) {
        if (!part) return;
        var node = j % 2 ? document.createElement("code") : document.createTextNode(part);
        if (j % 2) node.textContent = part;
        el.appendChild(node);
      });
    });
  }

  function request(method, url, body) {
    var opts = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(url, opts).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (data) {
        if (resp.status === 401) window.location.href = root.dataset.login;
        if (!resp.ok) throw new Error(data.error || ("HTTP " + resp.status));
        return data;
      });
    });
  }

  // -- The start form and the Check button ---------------------------------------------------

  // Each trainer's declared parameters as fields: the required and the commonly set ones shown, the rest folded away.
  function showTrainer() {
    var opt = $("trainer").options[$("trainer").selectedIndex];
    setText($("trainer-description"), opt ? opt.dataset.description : "");
    var params = opt ? JSON.parse(opt.dataset.params || "{}") : {};
    var required = $("params-required"), optional = $("params-optional");
    var fields = optional.querySelector(".params-fields");
    required.textContent = "";
    fields.textContent = "";
    Object.keys(params).forEach(function (name) {
      var p = params[name], row = document.createElement("label"), input = document.createElement("input");
      row.className = "param";
      var title = document.createElement("code");
      title.textContent = name;
      var help = document.createElement("span");
      help.className = "muted small";
      help.textContent = p.help;
      input.type = "text";
      input.name = "param:" + name;
      input.dataset.param = name;
      input.required = !!p.required;
      row.appendChild(title);
      row.appendChild(input);
      row.appendChild(help);
      (p.required || p.shown ? required : fields).appendChild(row);
    });
    optional.hidden = !fields.childNodes.length;
  }

  // A trainer this machine lacks the packages for, while a backend on this machine is picked: said
  // before Start (the server refuses such a run with the same words), with the command that installs them.
  // Said once, under the trainer: Start is off while it holds (the server would refuse the run with
  // the same words), and Check points here instead of repeating it.
  function trainerProblem() {
    var opt = $("trainer").options[$("trainer").selectedIndex];
    var backend = $("backend").options[$("backend").selectedIndex];
    return opt && backend && backend.dataset.here === "1" ? opt.dataset.cannotHere || "" : "";
  }

  // The trainer menu names what each trainer lacks on this machine while a backend on this machine is
  // picked (the server writes each text); on a remote backend, whose machine may have it, the plain names.
  function markTrainers() {
    var backend = $("backend").options[$("backend").selectedIndex];
    var here = !!backend && backend.dataset.here === "1";
    Array.prototype.forEach.call($("trainer").options, function (opt) {
      setText(opt, here ? opt.dataset.labelHere || opt.value : opt.value);
    });
  }

  function showTrainerProblem() {
    var problem = trainerProblem();
    setCodeText($("trainer-problem"), problem);
    $("trainer-problem").hidden = !problem;
    $("start").disabled = !!problem;
    $("start-blocked").hidden = !problem;
    if (problem) setText($("form-error"), "");
  }

  function paramValues() {
    var out = {};
    document.querySelectorAll("input[data-param]").forEach(function (input) {
      var raw = input.value.trim();
      if (!raw) return;
      if (raw === "true" || raw === "false") out[input.dataset.param] = raw === "true";
      else if (/^-?\d+(\.\d+)?([eE]-?\d+)?$/.test(raw)) out[input.dataset.param] = Number(raw);
      else out[input.dataset.param] = raw;
    });
    return out;
  }

  // Each chosen schema's labelled items (distinct), counted by the label a run trains on (the server
  // applies the worker's rule), how many of them annotators disagree on, and a warning when too few.
  function showLabels() {
    var box = $("schemas"), summary = JSON.parse(box.dataset.summary || "{}"), least = Number(box.dataset.minPerClass);
    var chosen = Array.prototype.map.call(document.querySelectorAll('input[name="schemas"]:checked'),
      function (input) { return input.value; });
    var lines = [], few = [], disagree = false;
    chosen.forEach(function (schema) {
      var s = summary[schema] || { items: 0, classes: [], disagree: 0, none: 0 };
      if (!s.items) { lines.push(schema + ": no labelled items yet"); few.push(schema + " has no labels"); return; }
      var parts = s.classes.map(function (c) { return c[0] + " " + c[1]; });
      if (s.none) parts.push(s.none + (s.kind === "span" ? " with nothing marked" : " with no label"));
      var unit = s.kind_of_items === "steps" ? " labelled step" : " labelled item";
      var line = schema + ": " + s.items + unit + (s.items === 1 ? "" : "s") + ": " + parts.join(" · ");
      if (s.disagree) line += " (" + s.disagree + " of them with disagreeing labels)";
      lines.push(line);
      disagree = disagree || s.disagree > 0;
      if (s.kind !== "span" && s.classes.length + (s.none ? 1 : 0) < 2) few.push(schema + " has one class");
      s.classes.forEach(function (c) { if (c[1] < least) few.push(c[0] + " (" + schema + ") has " + c[1]); });
    });
    setText($("label-summary"), lines.join("\n"));
    $("label-rule").hidden = !disagree;
    var warning = $("label-warning"), opt = $("trainer").options[$("trainer").selectedIndex];
    // A trainer that learns nothing from the labels (llm-zero-shot) needs none: no "few labels" to warn of.
    if (opt && opt.dataset.learns === "false") few = [];
    warning.hidden = !few.length;
    setText(warning, few.length ? "Few labels: " + few.join("; ") + ". With fewer than " + least +
      " items per class the holdout score says little; label more, or start anyway." : "");
  }

  function checkBackend() {
    var name = $("backend").value, out = $("check-result"), btn = $("check");
    btn.disabled = true;
    out.hidden = false;
    out.className = "check-result";
    setCodeText(out, "Checking " + name + "…");
    request("POST", api("backends/" + encodeURIComponent(name) + "/check")).then(function (report) {
      var shown = trainerProblem();
      var lines = (report.lines || []).map(function (line) {
        return shown && line === shown ? line.split(": ")[0] + ": as said under Trainer, above." : line;
      });
      setCodeText(out, lines.join("\n") || (report.ok ? "OK" : "The check failed."));
      out.classList.add(report.ok ? "ok" : "error");
    }).catch(function (err) {
      setCodeText(out, "The check could not run: " + err.message);
      out.classList.add("error");
    }).then(function () { btn.disabled = false; });
  }

  function startRun(ev) {
    ev.preventDefault();
    var error = $("form-error"), btn = $("start");
    var schemas = Array.prototype.map.call(document.querySelectorAll('input[name="schemas"]:checked'),
      function (input) { return input.value; });
    if (!schemas.length) { setCodeText(error, "Pick at least one schema to train."); return; }
    if (trainerProblem()) return; // Start is off; Enter in a field still submits
    setCodeText(error, "");
    btn.disabled = true;
    request("POST", api("runs"), { trainer: $("trainer").value, schemas: schemas, backend: $("backend").value,
                                    params: paramValues() })
      .then(function (run) {
        state.runs = [run].concat(state.runs.filter(function (r) { return r.id !== run.id; }));
        select(run.id);
      })
      .catch(function (err) { setCodeText(error, err.message); })
      .then(function () { btn.disabled = !!trainerProblem(); });
  }

  function cancelRun(id, btn) {
    btn.disabled = true;
    request("POST", runApi(id, "/cancel")).then(poll).catch(function (err) {
      btn.disabled = false;
      setText($("runs-error"), "Cancel run " + id + " failed: " + err.message);
    });
  }

  function cancelButton(id) {
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "cancel";
    btn.textContent = "Cancel run";
    btn.addEventListener("click", function (ev) { ev.stopPropagation(); cancelRun(id, btn); });
    return btn;
  }

  // -- The runs table: rows are updated in place so focus and selection survive each poll ---------

  function makeRow(id) {
    var tr = document.createElement("tr");
    tr.dataset.runId = id;
    var heads = $("runs").tHead.rows[0].cells; // a narrow screen shows each row as a card, its cells labelled
    ["run", "trainer", "backend", "state", "step", "score", "started", "actions"].forEach(function (cls, i) {
      var td = document.createElement("td");
      td.className = cls;
      td.dataset.label = heads[i].textContent;
      tr.appendChild(td);
    });
    var open = document.createElement("button");
    open.type = "button";
    open.className = "linklike";
    open.textContent = id;
    open.setAttribute("aria-label", "Show run " + id);
    tr.cells[0].appendChild(open);
    tr.addEventListener("click", function () { select(id); });
    return tr;
  }

  function updateRow(tr, run) {
    var c = tr.cells, m = run.metrics || {}, done = isTerminal(run);
    tr.dataset.state = run.state;
    tr.classList.toggle("selected", run.id === state.selected);
    if (run.id === state.selected) tr.setAttribute("aria-current", "true"); else tr.removeAttribute("aria-current");
    setText(c[1], run.trainer);
    setText(c[2], run.backend);
    c[2].title = run.device ? "Device: " + run.device : "";
    setText(c[3], run.state);
    c[3].title = [run.reason, run.message].filter(Boolean).join(": ");
    setText(c[4], (run.step || "") + (!done && typeof run.progress === "number" ? " (" + pct(run.progress) + ")" : ""));
    var head = headline(run);
    setText(c[5], head.value == null ? "—" : fmtScore(head.value) + " " + head.name);
    c[5].title = head.title;
    setText(c[6], fmtShort(run.started_at));
    c[6].title = (run.started_at ? "Started " + fmtTime(run.started_at) + "; queued " : "Queued ") + fmtTime(run.created_at) + (run.trigger === "auto" ? " by auto_retrain" : "");
    var btn = c[7].querySelector("button.cancel");
    if (done && btn) btn.remove();
    if (!done && !btn) c[7].appendChild(btn = cancelButton(run.id));
    if (btn) { btn.disabled = !!run.cancel_requested; btn.title = run.cancel_requested ? "Cancel requested" : ""; }
  }

  function renderRuns() {
    var tbody = $("runs").tBodies[0], rows = {};
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-run-id]"), function (tr) { rows[tr.dataset.runId] = tr; });
    var empty = tbody.querySelector("tr.empty");
    if (state.runs.length && empty) empty.remove();
    if (!state.runs.length) {
      if (!empty) { empty = tbody.insertRow(); empty.className = "empty"; empty.insertCell().colSpan = 8; }
      empty.cells[0].className = "muted";
      setText(empty.cells[0], "No runs yet: start one above.");
    }
    state.runs.forEach(function (run, i) {
      var tr = rows[run.id] || makeRow(run.id);
      delete rows[run.id];
      updateRow(tr, run);
      if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
    });
    Object.keys(rows).forEach(function (id) { rows[id].remove(); });
  }

  // -- The detail panel of the selected run ----------------------------------------------------

  function select(id) {
    if (state.selected !== id) {
      state.selected = id;
      state.detailDone = false;
      state.events = { id: id, next: 0, points: [], offset: 0, last: null, mode: null };
      history.replaceState(null, "", "#run=" + encodeURIComponent(id));
      $("run-log").textContent = "";
      drawChart(find(id));
    }
    if (state.runs.length) renderRuns();
    var run = find(id);
    if (run) renderDetail(run);
    $("run-detail").hidden = false;
    poll();
  }

  // Span schemas are scored span by span (exact match), so a run of span schemas alone has no
  // accuracy: its headline is the span F1 (the mean over its span schemas).
  function spanSchemas(run) {
    var m = run.metrics || {};
    return (run.schemas || []).filter(function (s) { return typeof m[s + "/holdout_f1"] === "number"; });
  }

  // The run's one score, named: accuracy, or span F1 for a run of span schemas alone (the learning
  // curve scores each point the same way, so the table and the curve never disagree).
  function headline(run) {
    var m = run.metrics || {};
    var on = typeof m.n_holdout === "number" ? " (" + m.n_holdout + " holdout item" + (m.n_holdout === 1 ? "" : "s") + ")" : "";
    if (typeof m.holdout_accuracy === "number") {
      return { value: m.holdout_accuracy, name: "accuracy", title: "Accuracy on the holdout split" + on +
        (typeof m.holdout_macro_f1 === "number" ? "; macro-F1 " + fmtScore(m.holdout_macro_f1) : "") };
    }
    var spans = spanSchemas(run);
    if (!spans.length) return { value: null, name: "", title: "" };
    var sum = spans.reduce(function (acc, s) { return acc + m[s + "/holdout_f1"]; }, 0);
    return { value: sum / spans.length, name: "span F1",
             title: "Span F1 on the holdout split" + on + " (a span counts when its start, end and label are right)" };
  }

  function scoreText(run) {
    var m = run.metrics || {}, parts = [];
    if (typeof m.holdout_accuracy === "number") parts.push(fmtScore(m.holdout_accuracy) + " accuracy");
    if (typeof m.holdout_macro_f1 === "number") parts.push("macro-F1 " + fmtScore(m.holdout_macro_f1));
    spanSchemas(run).forEach(function (s) {
      parts.push(s + ": span F1 " + fmtScore(m[s + "/holdout_f1"]) + " (precision " + fmtScore(m[s + "/holdout_precision"]) +
        ", recall " + fmtScore(m[s + "/holdout_recall"]) + ")");
    });
    if (!parts.length) return "—";
    if (m.n_train != null && m.n_holdout != null) parts.push(m.n_train + " train / " + m.n_holdout + " holdout items");
    return parts.join(" · ");
  }

  // One row per span label: what the model finds well and what it misses.
  function renderSpanScores(run) {
    var m = run.metrics || {}, table = $("run-span-scores"), body = table.tBodies[0], rows = [];
    spanSchemas(run).forEach(function (schema) {
      var prefix = schema + "/", seen = {};
      Object.keys(m).forEach(function (key) {
        var match = key.indexOf(prefix) === 0 && /^(.+)\/holdout_f1$/.exec(key.slice(prefix.length));
        if (match && !seen[match[1]]) { seen[match[1]] = true; rows.push([schema, match[1]]); }
      });
    });
    rows.sort(function (a, b) { return a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : (a[0] < b[0] ? -1 : 1); });
    var wanted = rows.map(function (r) { return r.join("\u0000"); }).join("\n");
    table.hidden = !rows.length;
    if (table.dataset.rows === wanted + "|" + run.id) return;
    table.dataset.rows = wanted + "|" + run.id;
    body.textContent = "";
    rows.forEach(function (r) {
      var base = r[0] + "/" + r[1] + "/holdout_", tr = document.createElement("tr");
      [r[0], r[1], fmtScore(m[base + "precision"]), fmtScore(m[base + "recall"]), fmtScore(m[base + "f1"]),
       m[base + "support"] == null ? "—" : String(m[base + "support"])].forEach(function (text, i) {
        var td = document.createElement(i < 2 ? "th" : "td");
        if (i < 2) td.scope = "row";
        td.textContent = text;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  // Where the run's model files are, from the fields its backend recorded (run.model).
  function modelText(place) {
    if (!place) return "";
    var parts = [];
    if (place.folder && place.files) {
      parts.push(place.files + (place.files === 1 ? " file, " : " files, ") +
        (place.bytes / 1e6).toFixed(1) + " MB on this server");
    }
    if (place.host) {
      var which = place.kept_files && place.kept_files.length ? place.kept_files.join(", ") + " " :
        (parts.length ? "the rest " : "");
      var why = place.kept ? " (" + place.kept + (place.limit_mb ? " " + place.limit_mb + " MB" : "") + ")" : "";
      parts.push(which + "on " + place.host + " at " + (place.host_folder || "its job folder") + why);
    }
    return parts.join("; ");
  }

  function suggestionText(m) {
    var written = m["suggestions/written"];
    if (typeof written !== "number") return "—";
    var below = m["suggestions/below_confidence"] || 0, minConf = $("run-suggestion-count").dataset.minConfidence;
    var text = written + " suggestion" + (written === 1 ? "" : "s") + " written";
    if (!written && below) return text + " (all below min_confidence " + minConf + ")";
    if (below) text += ", " + below + " below min_confidence " + minConf;
    if (m["suggestions/invalid"]) text += ", " + m["suggestions/invalid"] + " invalid";
    return text;
  }

  // With writeback.include_unlabeled off (the default), only items someone labelled get a suggestion;
  // the count of the others was in run.log alone, so a first run looked as if most items had none.
  function unlabelledText(m) {
    var skipped = m["suggestions/unlabelled_skipped"];
    if (typeof skipped !== "number" || !skipped) return "";
    return "; " + skipped + " unlabelled item" + (skipped === 1 ? "" : "s") + " got none because " +
      "writeback.include_unlabeled is off (set it to true to suggest on items nobody labelled yet)";
  }

  function progressText(run) {
    var last = state.events && state.events.last;
    var opt = Array.prototype.filter.call($("backend").options, function (o) { return o.value === run.backend; })[0];
    var remote = opt && opt.dataset.here !== "1"; // a run on this machine's "copying" is a move on disk
    if (run.state === "copying" && remote && typeof run.progress === "number") return "Copy-back: " + pct(run.progress) + " of the model has arrived";
    if (!last || isTerminal(run)) return typeof run.progress === "number" ? pct(run.progress) : "";
    var parts = ["step " + last.step + (last.total ? " of " + last.total : "")];
    if (last.epoch != null) parts.push("epoch " + last.epoch);
    if (typeof last.loss === "number") parts.push("loss " + fmtNum(last.loss));
    return parts.join(" · ");
  }

  function renderDetail(run) {
    var done = isTerminal(run), panel = $("run-detail"), bar = $("run-progress");
    panel.dataset.runId = run.id;
    panel.dataset.state = run.state;
    setText($("run-id"), run.id);
    setText($("run-state"), run.state);
    setText($("run-step"), run.step || (run.state === "queued" ? "waiting in the queue" : run.state));
    if (typeof run.progress === "number") bar.value = run.progress;
    else if (run.state === "queued") bar.value = 0;
    else bar.removeAttribute("value"); // indeterminate while a phase reports no fraction
    bar.hidden = done && typeof run.progress !== "number";
    setText($("run-progress-text"), progressText(run));
    var note = [run.reason, run.message].filter(Boolean).join(": ");
    if (run.cancel_requested && !done) note = "Cancel requested; the run stops shortly.";
    setText($("run-message"), note);
    $("run-message").className = run.state === "failed" ? "error" : "muted";
    setText($("run-score"), scoreText(run));
    renderSpanScores(run);
    setText($("run-suggestion-count"), suggestionText(run.metrics || {}) + unlabelledText(run.metrics || {}));
    setText($("run-trainer"), run.trainer);
    setText($("run-schemas"), (run.schemas || []).join(", "));
    var where = run.agent && run.agent.host && run.agent.host !== "this machine" ? " (agent on " + run.agent.host + ")" : "";
    var model = modelText(run.model);
    setText($("run-backend"), run.backend + where + (model ? " · model files: " + model :
      (run.artifact_uri && where ? " · model files: " + run.artifact_uri : "")));
    setText($("run-device"), run.device || "—");
    setText($("run-trigger"), run.trigger === "auto" ? "auto_retrain" : (run.trigger || "manual"));
    setText($("run-times"), "queued " + fmtTime(run.created_at) + " · started " + fmtTime(run.started_at) +
      (run.finished_at ? " · finished " + fmtTime(run.finished_at) : ""));
    var link = $("run-suggestions");
    link.hidden = run.state !== "succeeded";
    link.href = runApi(run.id, "/suggestions?format=jsonl");
    link.setAttribute("download", "suggestions-" + run.id + ".jsonl");
    var cancel = $("run-cancel");
    cancel.hidden = done;
    cancel.disabled = !!run.cancel_requested;
    if (typeof run.log_tail === "string") {
      var log = $("run-log"), atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 24;
      setText(log, run.log_tail || "(nothing logged yet)");
      if (atEnd) log.scrollTop = log.scrollHeight;
    }
    renderPush(run);
  }

  // -- Push to Hugging Face Hub: a succeeded run's model files and a model card, in one commit ------
  // The push runs on the server; its state (GET runs/<id>/push) is polled every second while it runs.

  var push = { id: null, timer: null, bound: false };

  function renderPush(run) {
    var box = $("push");
    if (!push.bound) { push.bound = true; $("push-form").addEventListener("submit", startPush); }
    box.hidden = run.state !== "succeeded";
    if (box.hidden) { clearTimeout(push.timer); push.id = null; return; }
    if (push.id === run.id) return; // loaded already; it polls itself while a push runs
    push.id = run.id;
    setText($("push-error"), "");
    setText($("push-status"), "");
    $("push-done").hidden = true;
    $("push-form").hidden = true;
    $("push-blocked").hidden = true;
    loadPush(run.id, true);
  }

  function loadPush(id, fill) {
    clearTimeout(push.timer);
    return request("GET", runApi(id, "/push")).then(function (data) {
      if (push.id === id) showPush(id, data, fill);
    }).catch(function (err) {
      if (push.id !== id) return;
      setText($("push-error"), "Could not load the push state: " + err.message);
      push.timer = setTimeout(function () { loadPush(id, fill); }, SLOW_MS);
    });
  }

  function showPush(id, data, fill) {
    var form = $("push-form"), pushing = data.state === "pushing", done = data.state === "done";
    var blocked = $("push-blocked");
    blocked.hidden = !!data.can_push;
    setText(blocked, data.can_push ? "" : data.blocked);
    form.hidden = !data.can_push;
    if (fill) {
      $("push-repo").value = data.repo_id || data.default_repo_id || "";
      $("push-private").checked = data.private !== false;
      $("push-message").value = data.default_commit_message || "";
    }
    Array.prototype.forEach.call(form.querySelectorAll("input, button"), function (el) { el.disabled = pushing; });
    // No usable token (none set, or its file missing or empty): the push could only fail, so the
    // button is off with the reason beside it.
    $("push-start").disabled = pushing || !data.token_from || !!data.token_problem;
    $("push-token").className = data.token_from && !data.token_problem ? "muted small" : "warning small";
    setText($("push-token"), data.token_from && data.token_problem ? data.token_problem : data.token_from
      ? "The token comes from " + data.token_from + ", read when a push starts."
      : "No Hugging Face token is set up, so nothing can be pushed yet: write a token with write access to a file " +
        "(chmod 600), name it in model_training.hub.token_file and restart the server; or set HF_TOKEN in the " +
        "server's environment and restart it. Once the server knows the file, a new token written there counts " +
        "from the next push, with no restart.");
    setText($("push-status"), pushing ? "Pushing: " + (data.progress || "starting") + "…" : "");
    var link = $("push-link"), url = done && /^https?:\/\//.test(data.repo_url || "") ? data.repo_url : "";
    $("push-done").hidden = !url;
    link.href = url || "#";
    setText(link, url ? data.repo_id || url : "");
    setText($("push-error"), data.state === "failed" ? data.error : "");
    if (pushing) push.timer = setTimeout(function () { loadPush(id, false); }, FAST_MS);
  }

  function startPush(ev) {
    ev.preventDefault();
    var id = push.id, btn = $("push-start");
    if (!id) return;
    btn.disabled = true;
    setText($("push-error"), "");
    $("push-done").hidden = true;
    // An emptied field asks for the default repository (the API refuses an empty repo_id).
    request("POST", runApi(id, "/push"), { repo_id: $("push-repo").value.trim() || null,
                                           private: $("push-private").checked,
                                           commit_message: $("push-message").value.trim() })
      .then(function (data) { if (push.id === id) showPush(id, data, false); })
      .catch(function (err) {
        btn.disabled = false;
        if (push.id === id) setText($("push-error"), err.message);
      });
  }

  function addEvents(id, after, data) {
    var ev = state.events;
    if (!ev || ev.id !== id || ev.next !== after) return false; // stale answer: selection moved on
    var added = false;
    (data.events || []).forEach(function (e) {
      if (e.type !== "progress") return;
      ev.last = e;
      if (typeof e.loss !== "number" || typeof e.step !== "number") return;
      var prev = ev.points[ev.points.length - 1];
      if (prev && e.step + ev.offset < prev.x) ev.offset = prev.x; // a trainer that restarts its step count per epoch
      ev.points.push({ x: e.step + ev.offset, y: e.loss });
      added = true;
    });
    ev.next = typeof data.next === "number" ? data.next : after;
    return added;
  }

  function loadDetail() {
    var id = state.selected, listed = id && find(id);
    if (!id || (state.detailDone && listed && isTerminal(listed))) return null; // a finished run no longer changes
    var after = state.events.next;
    return Promise.all([request("GET", runApi(id)), request("GET", runApi(id, "/events?after=" + after))])
      .then(function (res) {
        if (state.selected !== id) return;
        var added = addEvents(id, after, res[1]);
        if (added || lossMode(res[0]) !== state.events.mode) drawChart(res[0]);
        renderDetail(res[0]);
        state.detailDone = isTerminal(res[0]);
      })
      .catch(function (err) {
        if (state.selected === id) setText($("run-message"), "Could not load run " + id + ": " + err.message);
      });
  }

  // -- The loss chart: a polyline of loss against step, scaled to the data ------------------------

  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text != null) node.textContent = text;
    return node;
  }

  function reportsLoss(trainer) {
    var opt = Array.prototype.filter.call($("trainer").options, function (o) { return o.value === trainer; })[0];
    return !!opt && opt.dataset.reportsLoss === "true";
  }

  // "chart": loss points to draw; "waiting": a trainer that reports a loss is at work and none has
  // come yet; "none": nothing to show (a trainer without a loss, or a run that ended without one).
  function lossMode(run) {
    if (state.events && state.events.points.length) return "chart";
    var working = run && (run.state === "preparing" || run.state === "running");
    return working && reportsLoss(run.trainer) ? "waiting" : "none";
  }

  function drawChart(run) {
    var chart = $("loss-chart"), pts = state.events ? state.events.points : [], mode = lossMode(run);
    if (state.events) state.events.mode = mode;
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    $("loss").hidden = mode === "none";
    if (mode !== "chart") {
      var note = "No loss reported yet.";
      if (mode === "waiting") chart.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", "class": "chart-note" }, note));
      chart.setAttribute("aria-label", "Training loss by step: " + note);
      return;
    }
    var ys = pts.map(function (p) { return p.y; });
    var x0 = pts[0].x, x1 = pts[pts.length - 1].x, y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { var pad = Math.abs(y0) * 0.1 || 1; y0 -= pad; y1 += pad; }
    var sx = function (x) { return (PAD.l + (x - x0) / (x1 - x0) * (W - PAD.l - PAD.r)).toFixed(1); };
    var sy = function (y) { return (H - PAD.b - (y - y0) / (y1 - y0) * (H - PAD.t - PAD.b)).toFixed(1); };
    chart.appendChild(svg("polyline", { "class": "chart-axis", points: PAD.l + "," + PAD.t + " " + PAD.l + "," + (H - PAD.b) + " " + (W - PAD.r) + "," + (H - PAD.b) }));
    chart.appendChild(svg("text", { x: PAD.l - 6, y: PAD.t + 4, "text-anchor": "end" }, fmtNum(y1)));
    chart.appendChild(svg("text", { x: PAD.l - 6, y: H - PAD.b, "text-anchor": "end" }, fmtNum(y0)));
    chart.appendChild(svg("text", { x: PAD.l, y: H - 8, "text-anchor": "start" }, String(pts[0].x)));
    chart.appendChild(svg("text", { x: W - PAD.r, y: H - 8, "text-anchor": "end" }, String(pts[pts.length - 1].x)));
    chart.appendChild(svg("text", { x: (W + PAD.l) / 2, y: H - 8, "text-anchor": "middle" }, "step"));
    var line = pts.map(function (p) { return sx(p.x) + "," + sy(p.y); }).join(" ");
    chart.appendChild(svg("polyline", { "class": "loss-line", points: line }));
    if (pts.length === 1) chart.appendChild(svg("circle", { "class": "loss-dot", cx: sx(pts[0].x), cy: sy(pts[0].y), r: 3 }));
    var last = pts[pts.length - 1];
    chart.setAttribute("aria-label", "Training loss by step: " + pts.length + " points, last " + fmtNum(last.y) + " at step " + last.x);
  }

  // -- What each label bought: the holdout score against labelled items, a line per trainer and schema --
  // Each point is scored as the runs table scores its run (accuracy, or span F1), carries n (the
  // holdout items it stands on) and a 95 % interval, drawn as a band and an error bar: on a holdout
  // of a few items the band is wide, and a dip inside it reads as the noise it is.

  var CH = 236, CPAD = { l: 40, r: 14, t: 34, b: 38 };

  function itemsText(n) { return n == null ? "an unknown number of holdout items" : n + " holdout item" + (n === 1 ? "" : "s"); }
  function rangeText(p) { return "95% interval " + fmtScore(p.low) + "–" + fmtScore(p.high); }

  function overlaps(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }

  // The first of the places offered where a text covers no text already drawn, moved inside the chart
  // where it would run past an edge; none such: left out (each point's tooltip and the legend still
  // say it). Returns whether it was drawn.
  function placeText(chart, nodes, taken, W) {
    return [].concat(nodes).some(function (node) {
      chart.appendChild(node);
      var box = node.getBBox();
      if (box.x < 1) { node.setAttribute("x", Number(node.getAttribute("x")) + 1 - box.x); box = node.getBBox(); }
      if (box.x + box.width > W - 1) { node.setAttribute("x", Number(node.getAttribute("x")) - (box.x + box.width - W + 1)); box = node.getBBox(); }
      if (taken.some(function (t) { return overlaps(t, box); })) { chart.removeChild(node); return false; }
      taken.push(box);
      return true;
    });
  }

  // Drawn at the chart's own width (not scaled from a fixed width), so its text is 11 px on a phone and on a desktop.
  function drawCurve(series) {
    var card = $("curve-card"), chart = $("curve-chart"), legend = $("curve-legend");
    var lines = series.filter(function (s) { return s.points.length; });
    state.curve = series;
    card.hidden = !lines.length;
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    legend.textContent = "";
    if (!lines.length) return;
    var W = Math.max(260, Math.round(chart.getBoundingClientRect().width || 600));
    chart.setAttribute("viewBox", "0 0 " + W + " " + CH);
    var metrics = lines.map(function (s) { return s.metric; }).filter(function (m, i, all) { return all.indexOf(m) === i; });
    var yName = metrics.length === 1 ? "holdout " + metrics[0] : "holdout score (accuracy or span F1)";
    var xs = [].concat.apply([], lines.map(function (s) { return s.points.map(function (p) { return p.labels; }); }));
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    if (x1 === x0) { x0 = Math.max(0, x0 - 1); x1 = x1 + 1; }
    var bottom = CH - CPAD.b, taken = [];
    var sx = function (x) { return CPAD.l + (x - x0) / (x1 - x0) * (W - CPAD.l - CPAD.r); };
    var sy = function (y) { return CPAD.t + (1 - y) * (bottom - CPAD.t); };
    chart.appendChild(svg("line", { "class": "chart-grid", x1: CPAD.l, x2: W - CPAD.r, y1: sy(0.5), y2: sy(0.5) }));
    chart.appendChild(svg("line", { "class": "chart-grid", x1: CPAD.l, x2: W - CPAD.r, y1: sy(1), y2: sy(1) }));
    chart.appendChild(svg("polyline", { "class": "chart-axis", points: CPAD.l + "," + (CPAD.t - 6) + " " + CPAD.l + "," + bottom + " " + (W - CPAD.r) + "," + bottom }));
    placeText(chart, svg("text", { x: 4, y: 13, "text-anchor": "start", "class": "chart-title" }, yName), taken, W);
    [[1, "1.0"], [0.5, "0.5"], [0, "0.0"]].forEach(function (t) {
      placeText(chart, svg("text", { x: CPAD.l - 6, y: sy(t[0]) + 4, "text-anchor": "end" }, t[1]), taken, W);
    });
    placeText(chart, svg("text", { x: CPAD.l, y: bottom + 15, "text-anchor": "start" }, String(x0)), taken, W);
    placeText(chart, svg("text", { x: W - CPAD.r, y: bottom + 15, "text-anchor": "end" }, String(x1)), taken, W);
    placeText(chart, svg("text", { x: (W + CPAD.l) / 2, y: CH - 5, "text-anchor": "middle", "class": "chart-title" },
                         "labelled items trained on"), taken, W);
    var said = [];
    lines.forEach(function (s, i) {
      var cls = "series-" + (i % 6), last = s.points[s.points.length - 1];
      var upper = s.points.map(function (p) { return sx(p.labels).toFixed(1) + "," + sy(p.high).toFixed(1); });
      var lower = s.points.map(function (p) { return sx(p.labels).toFixed(1) + "," + sy(p.low).toFixed(1); }).reverse();
      var band = svg("polygon", { "class": "curve-band " + cls, points: upper.concat(lower).join(" ") });
      band.dataset.schema = s.schema;
      chart.appendChild(band);
      var pts = s.points.map(function (p) { return sx(p.labels).toFixed(1) + "," + sy(p.score).toFixed(1); });
      var line = svg("polyline", { "class": "curve-line " + cls, points: pts.join(" ") });
      line.dataset.schema = s.schema;
      line.dataset.trainer = s.trainer;
      chart.appendChild(line);
      s.points.forEach(function (p) {
        var x = sx(p.labels), hi = sy(p.high), lo = sy(p.low);
        var bar = svg("path", { "class": "curve-err " + cls, d: "M" + (x - 3) + "," + hi + "H" + (x + 3) + "M" + x + "," + hi +
                                "V" + lo + "M" + (x - 3) + "," + lo + "H" + (x + 3) });
        chart.appendChild(bar);
        var dot = svg("circle", { "class": "curve-dot " + cls, cx: x, cy: sy(p.score), r: 3.5 });
        dot.dataset.n = p.n == null ? "" : String(p.n);
        dot.appendChild(svg("title", {}, s.schema + ", " + s.trainer + ": " + s.metric + " " + fmtScore(p.score) + " on " +
                                       itemsText(p.n) + " (" + rangeText(p) + ") with " + p.labels + " labelled items (run " + p.run + ")"));
        chart.appendChild(dot);
      });
      var li = document.createElement("li"), swatch = document.createElement("span");
      swatch.className = "swatch " + cls;
      li.appendChild(swatch);
      li.appendChild(document.createTextNode(s.schema + " · " + s.trainer + ": " + s.metric + " " + fmtScore(last.score) +
        " on " + itemsText(last.n) + " (" + rangeText(last) + ") at " + last.labels + " labels (" + s.points.length +
        " run" + (s.points.length === 1 ? "" : "s") + ")"));
      legend.appendChild(li);
      said.push(s.schema + " with " + s.trainer + " reached " + s.metric + " " + fmtScore(last.score) + " (" + rangeText(last) +
                ", " + itemsText(last.n) + ") at " + last.labels + " labels");
    });
    // The holdout size by each point's bar (above it, else beside its top), drawn last: where every
    // place would cover another text, it is left out.
    lines.forEach(function (s) {
      s.points.forEach(function (p) {
        if (p.n == null) return;
        var x = sx(p.labels), top = sy(p.high), text = "n=" + p.n;
        placeText(chart, [svg("text", { x: x, y: top - 6, "text-anchor": "middle", "class": "curve-n" }, text),
                          svg("text", { x: x + 6, y: top + 4, "text-anchor": "start", "class": "curve-n" }, text),
                          svg("text", { x: x - 6, y: top + 4, "text-anchor": "end", "class": "curve-n" }, text)], taken, W);
      });
    });
    chart.setAttribute("aria-label", yName.charAt(0).toUpperCase() + yName.slice(1) + " by labelled items, with 95% intervals: " + said.join("; "));
  }

  function loadCurve() {
    var done = state.runs.filter(function (r) { return r.state === "succeeded"; }).length;
    if (done === state.curveFrom) return;
    state.curveFrom = done;
    request("GET", api("learning-curve")).then(function (data) { drawCurve(data.series || []); })
      .catch(function () { state.curveFrom = null; /* the runs poll reports connection trouble */ });
  }

  // Active learning: which run orders the items annotators get next (asked again after each run).
  function loadActiveLearning() {
    var done = state.runs.filter(function (r) { return r.state === "succeeded"; }).length;
    if (done === state.alFrom) return;
    state.alFrom = done;
    request("GET", api("active-learning")).then(function (al) {
      var box = $("al-state");
      box.hidden = !al.enabled;
      if (!al.enabled) return;
      var share = al.random_share ? ", " + Math.round(al.random_share * 100) + "% of them at random" : "";
      setText(box, al.run_id
        ? "Active learning: the next " + al.ordered + " items nobody has labelled go to annotators least certain " +
          "first (" + al.uncertainty.replace("_", " ") + "), by run " + al.run_id + " (" + al.trainer + ")" + share + "."
        : "Active learning: items come in the assignment's order until the first run, which starts once " +
          al.min_items + " items are labelled; then a run every " + al.every_n_labels + " labels reorders them.");
    }).catch(function () { state.alFrom = null; /* the runs poll reports connection trouble */ });
  }

  // -- Polling: one request chain at a time; a poll asked for mid-flight runs right after ---------

  // -- Agents (agent backends): connected or not, last seen, host, Python, GPUs, running run ----

  function fmtAgo(ts) {
    if (!ts) return "never";
    var s = Math.max(0, Math.round(Date.now() / 1000 - ts));
    return s < 90 ? s + " s ago" : s < 5400 ? Math.round(s / 60) + " min ago" : fmtShort(ts);
  }

  function renderAgents(list) {
    var tbody = document.querySelector("#agents tbody");
    if (!tbody) return;
    tbody.textContent = "";
    list.forEach(function (a) {
      var info = a.agent || {};
      var gpus = (info.gpus || []).map(function (g) {
        return g.index + ": " + g.name + (g.memory_free_mb != null ? " (" + g.memory_free_mb + " MB free)" : "");
      }).join(", ");
      var status = !a.registered ? "no token issued yet" : a.connected ? "connected"
        : a.left_at ? "left at " + fmtShort(a.left_at) : "not connected";
      var tr = document.createElement("tr");
      tr.dataset.backend = a.backend;
      tr.dataset.status = !a.registered ? "unregistered" : a.connected ? "connected" : "disconnected";
      [a.backend, status, a.registered ? fmtAgo(a.last_seen) : "—", info.host || "—", info.python || "—",
       info.host ? (gpus || "none") : "—", a.run || "—"].forEach(function (text, i) {
        var td = document.createElement("td");
        td.textContent = text;
        if (i === 1) td.className = "agent-status " + tr.dataset.status;
        if (i === 1 && !a.registered) td.title = "On the server: potato training register " + a.backend + " config.yaml";
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  function pollAgents() {
    if (!$("agents")) return;
    request("GET", api("agents")).then(function (data) { renderAgents(data.agents || []); })
      .catch(function () { /* the runs poll reports connection trouble */ });
  }

  function poll() {
    clearTimeout(state.timer);
    if (state.polling) { state.again = true; return; }
    pollAgents();
    state.polling = true;
    request("GET", api("runs")).then(function (data) {
      state.runs = data.runs || [];
      setText($("runs-error"), "");
      renderRuns();
      loadCurve();
      loadActiveLearning();
      return loadDetail();
    }).catch(function (err) {
      setText($("runs-error"), "Could not refresh the runs: " + err.message);
    }).then(function () {
      state.polling = false;
      if (state.again) { state.again = false; poll(); return; }
      var active = state.runs.some(function (r) { return !isTerminal(r); });
      state.timer = setTimeout(poll, active && !document.hidden ? FAST_MS : SLOW_MS);
    });
  }

  $("trainer").addEventListener("change", showTrainer);
  $("trainer").addEventListener("change", showLabels);
  $("trainer").addEventListener("change", showTrainerProblem);
  $("backend").addEventListener("change", markTrainers);
  $("backend").addEventListener("change", showTrainerProblem);
  $("check").addEventListener("click", checkBackend);
  $("start-form").addEventListener("submit", startRun);
  $("run-cancel").addEventListener("click", function () { if (state.selected) cancelRun(state.selected, $("run-cancel")); });
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
  $("schemas").addEventListener("change", showLabels);
  window.addEventListener("resize", function () { if (state.curve) drawCurve(state.curve); });
  showTrainer();
  markTrainers(); // a restored form may show another backend than the one the server drew the menu for
  showTrainerProblem();
  showLabels();
  var fromHash = /^#run=(.+)$/.exec(window.location.hash);
  if (fromHash) select(decodeURIComponent(fromHash[1])); else poll();
})();
