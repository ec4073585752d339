// The annotation page: an answer is stored as it is picked, moves fetch the next item, no page reloads.
(function () {
  "use strict";
  // saved: the answers the server holds for the item shown, as answers() writes them; failed: a
  // save did not get through, so the answers on the page may be the only copy.
  var state = { item: JSON.parse(document.getElementById("first-item").textContent), accepted: {}, saved: {},
                failed: false, leaving: false };
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

  // Progress, and whether the item shown is labelled: after a move, and after an answer is stored.
  function showProgress(item, current) {
    $("progress").textContent = item.done + " of " + item.total + " labelled";
    $("progress-bar").max = item.total;
    $("progress-bar").value = item.done;
    var done = item.finished || (item.done === item.total && item.total > 0);
    $("done").hidden = !done;
    if (!current) return;
    var badge = $("badge");
    badge.textContent = item.labelled ? "Labelled" : "Not labelled";
    badge.className = "badge " + (item.labelled ? "ok" : "todo");
  }

  function render(item, note) {
    armAlert();
    state.item = item;
    state.accepted = {};
    showProgress(item, true);
    $("item-number").textContent = item.number + " of " + item.total;
    $("item-id").textContent = item.id;
    showText(item);
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
    state.saved = answers();
    state.failed = false;
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


  function touchScreen() { return !!(window.matchMedia && window.matchMedia("(pointer: coarse)").matches); }
  function enterKey() { return touchScreen() ? "tap Save & next" : "press Enter"; }

  // A request that never reached the server (it is down, or the network is) is told apart from
  // one the server refused: after the first, the answers stay on the page for the next try.
  function unreachable() { var err = new Error("unreachable"); err.unreachable = true; return err; }

  function request(method, url, body, keepalive) {
    var opts = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    if (keepalive) opts.keepalive = true;
    return fetch(url, opts).then(function (resp) {
      return resp.json().catch(function () { return {}; }).then(function (data) {
        if (resp.status === 401) { var gone = new Error(data.error || "Your session ended."); gone.expired = true; throw gone; }
        // A proxy in front of a stopped server answers for it, without the server's JSON error.
        if (!data.error && (resp.status === 502 || resp.status === 503 || resp.status === 504)) throw unreachable();
        if (!resp.ok) throw new Error(data.error || ("HTTP " + resp.status));
        return data;
      });
    }, function () { throw unreachable(); });
  }

  // Says why a request failed; `kept`: it carried answers, which are still on the page and still
  // differ from what the server holds, so Enter sends them again. Always false (the task failed).
  function failed(err, kept, snap) {
    if (err.expired) return sessionEnded(snap);
    if (kept) {
      state.failed = true;
      $("badge").textContent = "Not saved";
      $("badge").className = "badge todo";
    }
    if (err.unreachable) {
      setStatus(kept ? "The server cannot be reached. Your answer is kept on this page: " + enterKey()
        + " to save it once the server is back." : "The server cannot be reached. Check your connection, then try again.", true);
    } else {
      setStatus((kept ? "Not saved: " : "") + err.message, true);
    }
    return false;
  }

  // -- A session that ended while the page was open (expired, or signed out in another tab) ------
  // The answer that met the 401 is kept in this tab (sessionStorage) and saved once the same
  // annotator signs in again; another name signing in here never gets it.
  var KEPT = "potato.answer-kept-for-sign-in", USER = $("annotate").dataset.user;

  function sessionEnded(snap) {
    if (snap && Object.keys(snap.labels).length) {
      try {
        sessionStorage.setItem(KEPT, JSON.stringify({ user: USER, id: snap.id, labels: snap.labels, accepted: snap.accepted }));
      } catch (e) { /* storage refused (private mode): the pick is lost as before, the form says why */ }
    }
    state.leaving = true;
    window.location.href = "/?session=ended";
    return false;
  }

  function saveKept() {
    var kept = null;
    try { kept = JSON.parse(sessionStorage.getItem(KEPT) || "null"); sessionStorage.removeItem(KEPT); } catch (e) { kept = null; }
    if (!kept || kept.user !== USER || !kept.labels) return;
    later(function () {
      var body = { id: kept.id, labels: kept.labels, accepted: kept.accepted || {}, go: "stay", partial: true };
      return request("POST", "/api/label", body).then(function (data) {
        if (kept.id === state.item.id) render(data.item);
        setStatus("Saved the answer you gave just before signing in again" + (kept.id === state.item.id ? "." : " (item " + kept.id + ")."));
        return true;
      }, function (err) { return failed(err, false); });
    }, false);
  }

  // -- One queue for all that talks to the server ------------------------------------------------
  // Keys and clicks are done in the order they came, each once the request before it has answered:
  // "1 Enter 2 Enter" typed faster than the server answers labels two items. A task returns true,
  // or false when it failed (what was queued behind it is then dropped, and the page says so), or a
  // promise of either.
  var tasks = [], running = false, inTask = false;

  function later(task, action) {
    task.action = !!action;
    tasks.push(task);
    pump();
  }

  function pump() {
    if (running || !tasks.length) return;
    var task = tasks.shift();
    running = true;
    new Promise(function (resolve) {
      inTask = true;
      try { resolve(task()); } finally { inTask = false; }
    }).catch(function (err) { setStatus(String((err && err.message) || err), true); return false; })
      .then(function (ok) { running = false; if (ok === false) dropActions(); pump(); });
  }

  // Keys and clicks made while a failed request was under way were meant for what should have come
  // after it: they are not done on the wrong item. A pick's own save is kept (it is data).
  function dropActions() {
    var kept = tasks.filter(function (t) { return !t.action; }), dropped = tasks.length - kept.length;
    tasks = kept;
    if (dropped) {
      $("status").textContent += dropped === 1 ? " A key or click made meanwhile was ignored."
        : " The " + dropped + " keys or clicks made meanwhile were ignored.";
    }
  }

  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

  // The answers on the page that differ from those the server holds for the item shown.
  function changes() {
    var a = answers(), out = {};
    Object.keys(a).forEach(function (k) { if (!same(a[k], state.saved[k])) out[k] = a[k]; });
    return out;
  }

  function dirty() { return Object.keys(changes()).length > 0; }

  // Only the changed answers: a save never undoes one this page has not seen (another tab's, or
  // one sent as the page was left that arrived after the page was loaded again).
  function snapshot() {
    return { id: state.item.id, labels: changes(), accepted: JSON.parse(JSON.stringify(state.accepted)) };
  }

  // A pick is stored as it is made (as upstream Potato does), so no way of leaving the item loses it.
  // The pick a key makes is saved next, before the keys typed after it; a click's, after what is queued.
  function saveSoon() {
    var snap = snapshot(), task = function () { return store(snap); };
    if (inTask) { task.action = false; tasks.unshift(task); return; }
    later(task, false);
  }

  // Store a snapshot of an item's answers; the item shown stays. Required questions may still be
  // open (Enter asks for them). `note`: what the page says once it is stored.
  function store(snap, note) {
    var keys = Object.keys(snap.labels);
    if (snap.id === state.item.id && keys.every(function (k) { return same(snap.labels[k], state.saved[k]); })) {
      if (note) setStatus(note);
      return true;
    }
    setStatus("Saving…");
    var body = { id: snap.id, labels: snap.labels, accepted: snap.accepted, go: "stay", partial: true };
    return request("POST", "/api/label", body).then(function (data) {
      var current = snap.id === state.item.id;
      if (current) {
        keys.forEach(function (k) { state.saved[k] = snap.labels[k]; });
        state.failed = false;
      }
      showProgress(data.item, current);
      setStatus(note || "Saved.");
      return true;
    }, function (err) { return failed(err, snap.id === state.item.id, snap); });
  }

  // Show the item `go` names; answers not stored yet (a box typed into, a pick whose save failed)
  // are stored with the same request. Stored answers are not sent again.
  function saveAndGo(go) {
    var a = answers();
    var hasAnswer = Object.keys(a).some(function (k) { return !isEmpty(a[k]); });
    var missing = missingRequired(a), forward = go === "next" || go === "next_unlabelled";
    if (missing.length && (hasAnswer || forward)) {
      setStatus("Answer \u201c" + missing.join("\u201d, \u201c") + "\u201d first: it is required.", true);
      return true;
    }
    if (!dirty()) return move(go);
    setStatus("Saving…");
    return request("POST", "/api/label", { id: state.item.id, labels: a, accepted: state.accepted, go: go })
      .then(function (data) { render(data.item, data.note); return true; },
            function (err) { return failed(err, true, { id: state.item.id, labels: a, accepted: state.accepted }); });
  }

  function move(go) {
    return request("GET", "/api/move?go=" + encodeURIComponent(go) + "&from=" + state.item.position)
      .then(function (data) { render(data.item, data.note); return true; }, function (err) { return failed(err, false); });
  }

  function gotoNumber(n) {
    if (!n) return;
    var box = $("goto-number");
    box.value = "";
    box.blur();  // the keys belong to the page again: "1" picks a label, not a digit in the box
    later(function () { return saveAndGo("item:" + n); }, true);
  }

  // Accepting is picking: the suggestion is stored as the annotator's answer, with its run.
  function acceptSuggestions() {
    var any = false;
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, s = (state.item.suggestions || {})[name];
      if (!s) return;
      any = true;
      setValue(fs, fs.dataset.type, s.label);
      state.accepted[name] = s.run_id;
    });
    if (!any) return true;
    updateVisibility();
    return store(snapshot(), "Suggestion accepted and saved as your label: " + enterKey() + " for the next item.");
  }

  schemes.forEach(function (fs) {
    // Changing an accepted answer by hand makes it the annotator's own again.
    fs.addEventListener("change", function () {
      delete state.accepted[fs.dataset.schema];
      updateVisibility();
      saveSoon();
    });
    fs.addEventListener("input", function () {
      fs.dataset.touched = "1";
      var out = fs.querySelector(".slider-value");
      if (out) out.textContent = field(fs).value;
      updateVisibility();
    });
    var btn = fs.querySelector(".s-accept");
    if (btn) btn.addEventListener("click", function () { later(acceptSuggestions, true); });
  });
  function onClick(id, go) {
    $(id).addEventListener("click", function () { later(function () { return saveAndGo(go); }, true); });
  }
  // Enter in a one-line box would submit the answers form (a page reload that drops them): it stays text.
  $("answers").addEventListener("submit", function (ev) { ev.preventDefault(); });
  onClick("save-next", "next");
  onClick("prev", "prev");
  onClick("next-unlabelled", "next_unlabelled");
  onClick("prev-unlabelled", "prev_unlabelled");
  if ($("goto")) $("goto").addEventListener("submit", function (ev) { ev.preventDefault(); gotoNumber($("goto-number").value); });

  // Sign out waits for the saves under way, and stores what is not stored yet; if that fails, the
  // annotator stays signed in, with the answer on the page and the reason.
  var signOut = $("sign-out");
  if (signOut) {
    signOut.addEventListener("submit", function (ev) {
      ev.preventDefault();
      later(function () {
        return Promise.resolve(dirty() ? store(snapshot()) : true).then(function (ok) {
          if (ok) signOut.submit();
          return ok;
        });
      }, true);
    });
  }

  // Reloading, closing the tab or going to another address: an answer not confirmed yet is sent on
  // the way out (keepalive outlives the page). If the server could not be reached, the browser asks
  // first whether to leave.
  window.addEventListener("beforeunload", function (ev) {
    if (state.failed && dirty() && !state.leaving) { ev.preventDefault(); ev.returnValue = ""; }
  });
  window.addEventListener("pagehide", function () {
    if (!dirty() || state.leaving) return;
    var snap = snapshot();
    request("POST", "/api/label", { id: snap.id, labels: snap.labels, accepted: snap.accepted, go: "stay", partial: true }, true)
      .catch(function () { /* the page is gone: nobody is left to tell; beforeunload asked if it had failed */ });
  });

  // A button or link clicked with the mouse lets go of the focus, so the next Enter is the page's
  // "save and next", not that button again. One reached with Tab keeps it: Enter does that button.
  document.addEventListener("click", function (ev) {
    if (ev.detail === 0) return;  // Enter or Space on a focused button: the keyboard chose it
    var el = ev.target.closest ? ev.target.closest("button, a, summary") : null;
    if (el) el.blur();
  });

  var keyed = Array.prototype.slice.call(document.querySelectorAll("input[data-key]"));
  var PAGE_KEYS = ["Enter", "ArrowRight", "ArrowLeft", "a", "g"];

  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    // Typing into a field is typing; the label choices (radios, checkboxes) are the page's own.
    if (tag === "textarea" || tag === "select" || (tag === "input" && ev.target.type !== "radio" && ev.target.type !== "checkbox")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Enter or Space on a button or link the keyboard moved to does that button ("← Previous", "Sign out").
    if ((ev.key === "Enter" || ev.key === " ") && (tag === "button" || tag === "a" || tag === "summary")) return;
    var label = keyed.some(function (i) { return i.dataset.key === ev.key; });
    if (!label && ev.key === "d") { window.potatoToggleTheme(); return; }
    if (!label && (PAGE_KEYS.indexOf(ev.key) < 0 || (ev.key === "g" && !$("goto-number")))) return;
    ev.preventDefault();
    var key = ev.key, shift = ev.shiftKey;
    later(function () { return pressed(key, shift); }, true);
  });

  // What a key does, when its turn comes (the item shown is then the one it was meant for).
  function pressed(key, shift) {
    // A hidden question's keys do nothing: it is not being asked.
    var input = keyed.filter(function (i) { return i.dataset.key === key && !i.closest("fieldset").hidden; })[0];
    if (input) {
      if (input.type === "radio") input.checked = true; else input.checked = !input.checked;
      input.dispatchEvent(new Event("change", { bubbles: true }));  // its save comes next
      return true;
    }
    if (key === "Enter") return saveAndGo("next");
    if (key === "ArrowRight") return saveAndGo(shift ? "next_unlabelled" : "next");
    if (key === "ArrowLeft") return saveAndGo(shift ? "prev_unlabelled" : "prev");
    if (key === "a") return acceptSuggestions();
    if (key === "g" && $("goto-number")) $("goto-number").focus();
    return true;
  }

  render(state.item);
  saveKept();
})();
