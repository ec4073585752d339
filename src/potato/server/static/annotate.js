// The annotation page: one request per item (save + fetch next), no page reloads.
(function () {
  "use strict";
  var state = { item: JSON.parse(document.getElementById("first-item").textContent), busy: false, accepted: {} };
  var $ = function (id) { return document.getElementById(id); };
  var schemes = Array.prototype.slice.call(document.querySelectorAll("fieldset.scheme"));

  function setStatus(text, isError) {
    var el = $("status");
    el.textContent = text || "";
    el.classList.toggle("error", !!isError);
  }

  // alert_time_each_instance: a gentle note after that long on one item, never a modal.
  var alertSeconds = Number($("annotate").dataset.alertSeconds || 0), alertTimer = null;
  function armAlert() {
    $("still-there").hidden = true;
    if (alertTimer) clearTimeout(alertTimer);
    if (alertSeconds > 0 && alertSeconds < 86400) {
      alertTimer = setTimeout(function () { $("still-there").hidden = false; }, alertSeconds * 1000);
    }
  }

  // The item's text, or the fields instance_display names, each under its label (as text, never HTML).
  function showText(item) {
    var box = $("item-text");
    if (!item.fields || !item.fields.length) { box.textContent = item.text; return; }
    box.textContent = "";
    item.fields.forEach(function (f) {
      var part = document.createElement("section"), head = document.createElement("h3"), body = document.createElement("div");
      part.className = "field";
      head.textContent = f.label;
      body.textContent = f.text;
      part.appendChild(head);
      part.appendChild(body);
      box.appendChild(part);
    });
  }

  function render(item, note) {
    armAlert();
    state.item = item;
    state.accepted = {};
    $("progress").textContent = item.done + " of " + item.total + " labelled";
    $("progress-bar").max = item.total;
    $("progress-bar").value = item.done;
    $("item-number").textContent = item.number + " of " + item.total;
    $("item-id").textContent = item.id;
    showText(item);
    var badge = $("badge");
    badge.textContent = item.labelled ? "Labelled" : "Not labelled";
    badge.className = "badge " + (item.labelled ? "ok" : "todo");
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, type = fs.dataset.type, value = item.labels[name];
      setValue(fs, type, value);
      var box = fs.querySelector(".suggestion"), s = (item.suggestions || {})[name];
      if (s) {
        box.hidden = false;
        box.querySelector(".s-label").textContent = Array.isArray(s.label) ? s.label.join(", ") : s.label;
        box.querySelector(".s-conf").textContent = "(" + Math.round(s.confidence * 100) + "% confident, run " + s.run_id + ")";
      } else {
        box.hidden = true;
      }
    });
    updateVisibility();
    var done = item.finished || (item.done === item.total && item.total > 0);
    $("done").hidden = !done;
    setStatus(note || "");
    window.scrollTo(0, 0);
  }

  // One reader and one writer per kind of field, so every scheme type is saved and shown the same way.
  function field(fs) { return fs.querySelector("textarea, select, input[type=text], input[type=range], input[type=number]"); }

  function setValue(fs, type, value) {
    if (type === "slider" || type === "number") {
      var input = field(fs), has = typeof value === "number";
      input.value = has ? String(value) : (type === "slider" ? (input.dataset.start || input.min || "0") : "");
      fs.dataset.touched = has ? "1" : "";
      var out = fs.querySelector(".slider-value");
      if (out) out.textContent = has ? String(value) : "not set";
    } else if (type === "text" && fs.querySelector("[data-multi]")) {
      fs.querySelectorAll("[data-label]").forEach(function (box) {
        box.value = (value && typeof value === "object" && value[box.dataset.label]) || "";
      });
    } else if (type === "text" || type === "select") {
      field(fs).value = value || "";
    } else {
      fs.querySelectorAll("input").forEach(function (input) {
        input.checked = type === "multiselect" ? Array.isArray(value) && value.indexOf(input.value) >= 0
          : input.value === value;
      });
    }
  }

  function getValue(fs) {
    var type = fs.dataset.type;
    if (type === "slider" || type === "number") {
      var input = field(fs);
      // An untouched slider is no answer: its resting place is not the annotator's choice.
      if (input.value === "" || (type === "slider" && !fs.dataset.touched)) return null;
      return Number(input.value);
    }
    if (type === "text" && fs.querySelector("[data-multi]")) {
      var boxes = {}, any = false;
      fs.querySelectorAll("[data-label]").forEach(function (box) {
        if (box.value) { boxes[box.dataset.label] = box.value; any = true; }
      });
      return any ? boxes : null;
    }
    if (type === "text" || type === "select") return field(fs).value;
    if (type === "multiselect") {
      return Array.prototype.map.call(fs.querySelectorAll("input:checked"), function (i) { return i.value; });
    }
    var checked = fs.querySelector("input:checked");
    return checked ? checked.value : null;
  }

  // display_logic, as potato/conditions.py decides it: a question shown only for some answers.
  function holds(c, answer) {
    var op = c.operator, fold = function (v) { return c.case_sensitive ? String(v) : String(v).toLowerCase(); };
    var empty = isEmpty(answer) || answer === undefined;
    if (op === "empty") return empty;
    if (op === "not_empty") return !empty;
    if (empty) return op === "not_equals" || op === "not_contains" || op === "not_in_range";
    var list = Array.isArray(answer) ? answer : [answer];
    if (op === "equals" || op === "not_equals") {
      var wanted = (Array.isArray(c.value) ? c.value : [c.value]).map(fold);
      var hit = list.some(function (g) { return wanted.indexOf(fold(g)) >= 0; });
      return op === "equals" ? hit : !hit;
    }
    if (op === "contains" || op === "not_contains") {
      var w = fold(c.value);
      var has = Array.isArray(answer) ? answer.some(function (a) { return fold(a) === w; }) : fold(answer).indexOf(w) >= 0;
      return op === "contains" ? has : !has;
    }
    if (op === "matches") return new RegExp(String(c.value), c.case_sensitive ? "" : "i").test(String(answer));
    var n;
    if (op.indexOf("length_") === 0) {
      if (typeof answer !== "string" && !Array.isArray(answer)) return false;
      n = answer.length; op = op.slice(7);
    } else {
      n = typeof answer === "boolean" ? NaN : Number(answer);
      if (!isFinite(n)) return false;
    }
    if (op === "in_range" || op === "not_in_range") {
      var inside = n >= Number(c.value[0]) && n <= Number(c.value[1]);
      return op === "in_range" ? inside : !inside;
    }
    var v = Number(c.value);
    return op === "gt" ? n > v : op === "gte" ? n >= v : op === "lt" ? n < v : n <= v;
  }

  function updateVisibility() {
    var current = {};
    schemes.forEach(function (fs) {
      var logic = fs.dataset.logic ? JSON.parse(fs.dataset.logic) : null;
      if (logic) {
        var results = logic.conditions.map(function (c) { return holds(c, current[c.schema]); });
        fs.hidden = !(logic.any ? results.some(Boolean) : results.every(Boolean));
      }
      current[fs.dataset.schema] = fs.hidden ? null : getValue(fs);
    });
  }

  function answers() {
    var out = {};
    schemes.forEach(function (fs) { out[fs.dataset.schema] = fs.hidden ? null : getValue(fs); });
    return out;
  }

  // The schemes marked required that have no answer yet, by their question.
  function missingRequired(a) {
    return schemes.filter(function (fs) { return fs.dataset.required && !fs.hidden && isEmpty(a[fs.dataset.schema]); })
      .map(function (fs) { return fs.querySelector("legend").firstChild.textContent.trim(); });
  }

  function isEmpty(value) { return value === null || value === "" || (Array.isArray(value) && value.length === 0); }

  function request(method, url, body) {
    var opts = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(url, opts).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (data) {
        if (resp.status === 401) { window.location.href = "/"; }
        if (!resp.ok) throw new Error(data.error || ("HTTP " + resp.status));
        return data;
      });
    });
  }

  function run(promise, saving) {
    state.busy = true;
    state.saving = !!saving;
    return promise.then(function (data) { render(data.item, data.note); })
      .catch(function (err) { setStatus((state.saving ? "Not saved: " : "") + err.message, true); })
      .then(function () { state.busy = false; });
  }

  // Save the answers (if there are any to save or clear), then show the item `go` names.
  function saveAndGo(go) {
    if (state.busy) return;
    var a = answers();
    var hasAnswer = Object.keys(a).some(function (k) { return !isEmpty(a[k]); });
    var missing = missingRequired(a), forward = go === "next" || go === "next_unlabelled";
    if (missing.length && (hasAnswer || forward)) {
      setStatus("Answer \u201c" + missing.join("\u201d, \u201c") + "\u201d first: it is required.", true);
      return;
    }
    if (!hasAnswer && !state.item.labelled) {
      move(go);
      return;
    }
    setStatus("Saving…");
    run(request("POST", "/api/label", { id: state.item.id, labels: a, accepted: state.accepted, go: go }), true);
  }

  function move(go) {
    if (state.busy) return;
    run(request("GET", "/api/move?go=" + encodeURIComponent(go) + "&from=" + state.item.position));
  }

  // Every way of leaving an item does the same with a picked answer: it is saved first.
  function gotoNumber(n) {
    if (state.busy || !n) return;
    var box = $("goto-number");
    box.value = "";
    box.blur();  // the keys belong to the page again: "1" picks a label, not a digit in the box
    saveAndGo("item:" + n);
  }

  function acceptSuggestions() {
    var any = false;
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, s = (state.item.suggestions || {})[name];
      if (!s) return;
      any = true;
      setValue(fs, fs.dataset.type, s.label);
      state.accepted[name] = s.run_id;
    });
    var touch = window.matchMedia && window.matchMedia("(pointer: coarse)").matches;
    if (any) setStatus("Suggestion accepted: " + (touch ? "tap Save & next" : "press Enter") + " to save it as your label.");
  }

  schemes.forEach(function (fs) {
    // Changing an accepted answer by hand makes it the annotator's own again.
    fs.addEventListener("change", function () { delete state.accepted[fs.dataset.schema]; updateVisibility(); });
    fs.addEventListener("input", function () {
      fs.dataset.touched = "1";
      var out = fs.querySelector(".slider-value");
      if (out) out.textContent = field(fs).value;
      updateVisibility();
    });
    var btn = fs.querySelector(".s-accept");
    if (btn) btn.addEventListener("click", acceptSuggestions);
  });
  // Enter in a one-line box would submit the answers form (a page reload that drops them): it stays text.
  $("answers").addEventListener("submit", function (ev) { ev.preventDefault(); });
  $("save-next").addEventListener("click", function () { saveAndGo("next"); });
  $("prev").addEventListener("click", function () { saveAndGo("prev"); });
  $("next-unlabelled").addEventListener("click", function () { saveAndGo("next_unlabelled"); });
  $("prev-unlabelled").addEventListener("click", function () { saveAndGo("prev_unlabelled"); });
  if ($("goto")) $("goto").addEventListener("submit", function (ev) { ev.preventDefault(); gotoNumber($("goto-number").value); });

  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    // Typing into a field is typing; the label choices (radios, checkboxes) are the page's own.
    if (tag === "textarea" || tag === "select" || (tag === "input" && ev.target.type !== "radio" && ev.target.type !== "checkbox")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Enter or Space on a focused button or link does that button ("← Previous", "Sign out").
    if ((ev.key === "Enter" || ev.key === " ") && (tag === "button" || tag === "a" || tag === "summary")) return;
    // A hidden question's keys do nothing: it is not being asked.
    var input = Array.prototype.filter.call(document.querySelectorAll('input[data-key="' + ev.key + '"]'),
      function (i) { return !i.closest("fieldset").hidden; })[0];
    if (input) {
      if (input.type === "radio") input.checked = true; else input.checked = !input.checked;
      input.dispatchEvent(new Event("change", { bubbles: true }));
      ev.preventDefault();
      return;
    }
    if (ev.key === "Enter") { ev.preventDefault(); saveAndGo("next"); }
    else if (ev.key === "ArrowRight") { ev.preventDefault(); saveAndGo(ev.shiftKey ? "next_unlabelled" : "next"); }
    else if (ev.key === "ArrowLeft") { ev.preventDefault(); saveAndGo(ev.shiftKey ? "prev_unlabelled" : "prev"); }
    else if (ev.key === "a") { acceptSuggestions(); }
    else if (ev.key === "g" && $("goto-number")) { ev.preventDefault(); $("goto-number").focus(); }
    else if (ev.key === "d") { window.potatoToggleTheme(); }
  });

  render(state.item);
})();
