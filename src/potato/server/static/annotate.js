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

  function render(item, note) {
    state.item = item;
    state.accepted = {};
    $("progress").textContent = item.done + " of " + item.total + " labelled";
    $("progress-bar").max = item.total;
    $("progress-bar").value = item.done;
    $("item-number").textContent = item.number + " of " + item.total;
    $("item-id").textContent = item.id;
    $("item-text").textContent = item.text;
    var badge = $("badge");
    badge.textContent = item.labelled ? "Labelled" : "Not labelled";
    badge.className = "badge " + (item.labelled ? "ok" : "todo");
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, type = fs.dataset.type, value = item.labels[name];
      if (type === "text") {
        fs.querySelector("textarea").value = value || "";
      } else {
        fs.querySelectorAll("input").forEach(function (input) {
          input.checked = type === "radio" ? input.value === value
            : Array.isArray(value) && value.indexOf(input.value) >= 0;
        });
      }
      var box = fs.querySelector(".suggestion"), s = (item.suggestions || {})[name];
      if (s) {
        box.hidden = false;
        box.querySelector(".s-label").textContent = Array.isArray(s.label) ? s.label.join(", ") : s.label;
        box.querySelector(".s-conf").textContent = "(" + Math.round(s.confidence * 100) + "% confident, run " + s.run_id + ")";
      } else {
        box.hidden = true;
      }
    });
    var done = item.done === item.total && item.total > 0;
    $("done").hidden = !done;
    setStatus(note || "");
    window.scrollTo(0, 0);
  }

  function answers() {
    var out = {};
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, type = fs.dataset.type;
      if (type === "text") {
        out[name] = fs.querySelector("textarea").value;
      } else if (type === "radio") {
        var checked = fs.querySelector("input:checked");
        out[name] = checked ? checked.value : null;
      } else {
        out[name] = Array.prototype.map.call(fs.querySelectorAll("input:checked"), function (i) { return i.value; });
      }
    });
    return out;
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
      var wanted = Array.isArray(s.label) ? s.label : [s.label];
      fs.querySelectorAll("input").forEach(function (input) { input.checked = wanted.indexOf(input.value) >= 0; });
      state.accepted[name] = s.run_id;
    });
    var touch = window.matchMedia && window.matchMedia("(pointer: coarse)").matches;
    if (any) setStatus("Suggestion accepted: " + (touch ? "tap Save & next" : "press Enter") + " to save it as your label.");
  }

  schemes.forEach(function (fs) {
    // Changing an accepted answer by hand makes it the annotator's own again.
    fs.addEventListener("change", function () { delete state.accepted[fs.dataset.schema]; });
    var btn = fs.querySelector(".s-accept");
    if (btn) btn.addEventListener("click", acceptSuggestions);
  });
  $("save-next").addEventListener("click", function () { saveAndGo("next"); });
  $("prev").addEventListener("click", function () { saveAndGo("prev"); });
  $("next-unlabelled").addEventListener("click", function () { saveAndGo("next_unlabelled"); });
  $("prev-unlabelled").addEventListener("click", function () { saveAndGo("prev_unlabelled"); });
  $("goto").addEventListener("submit", function (ev) { ev.preventDefault(); gotoNumber($("goto-number").value); });

  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    // Typing into a field is typing; the label choices (radios, checkboxes) are the page's own.
    if (tag === "textarea" || tag === "select" || (tag === "input" && ev.target.type !== "radio" && ev.target.type !== "checkbox")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Enter or Space on a focused button or link does that button ("← Previous", "Sign out").
    if ((ev.key === "Enter" || ev.key === " ") && (tag === "button" || tag === "a" || tag === "summary")) return;
    var input = document.querySelector('input[data-key="' + ev.key + '"]');
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
    else if (ev.key === "g") { ev.preventDefault(); $("goto-number").focus(); }
    else if (ev.key === "d") { window.potatoToggleTheme(); }
  });

  render(state.item);
})();
