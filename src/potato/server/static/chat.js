// The chat panel (chat_support): ask the study's LLM about the item shown. The item is the one in
// #item-meta's data-item (annotate.js keeps it there); each item has its own conversation, loaded
// when the panel opens or the item changes. Everything is drawn with textContent.
(function () {
  "use strict";
  var panel = document.getElementById("chat-panel"), toggle = document.getElementById("chat-toggle");
  if (!panel || !toggle) return;
  var log = document.getElementById("chat-log"), input = document.getElementById("chat-input");
  var status = document.getElementById("chat-status"), meta = document.getElementById("item-meta");
  var shownFor = null, busy = false;
  if (panel.dataset.width) panel.style.setProperty("--chat-width", panel.dataset.width + "px");

  function item() { return meta.dataset.item || ""; }
  function add(role, text) {
    var li = document.createElement("li"), span = document.createElement("span");
    li.className = role;
    span.textContent = text;
    li.appendChild(span);
    log.appendChild(li);
    log.scrollTop = log.scrollHeight;
  }
  function call(method, url, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (body) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(url, opts).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) throw new Error(data.error || ("HTTP " + r.status));
        return data;
      });
    });
  }
  function load() {
    var id = item();
    if (panel.hidden || !id || id === shownFor) return;
    shownFor = id;
    log.textContent = "";
    status.textContent = "";
    call("GET", "/api/chat/history?instance_id=" + encodeURIComponent(id)).then(function (data) {
      if (item() !== id) return;
      data.messages.forEach(function (m) { add(m.role, m.content); });
    }, function (err) { status.textContent = err.message; });
  }
  toggle.addEventListener("click", function () {
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) { load(); input.focus(); }
  });
  new MutationObserver(load).observe(meta, { attributes: true, attributeFilter: ["data-item"] });
  // Keys typed here are the question's, not the page's shortcuts.
  input.addEventListener("keydown", function (ev) {
    ev.stopPropagation();
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); document.getElementById("chat-form").requestSubmit(); }
  });
  document.getElementById("chat-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var text = input.value.trim(), id = item();
    if (!text || busy || !id) return;
    busy = true;
    add("user", text);
    input.value = "";
    status.textContent = "Asking the AI\u2026";
    call("POST", "/api/chat/send", { message: text, instance_id: id }).then(function (data) {
      if (item() === id) { add("assistant", data.content); status.textContent = ""; }
    }, function (err) {
      if (item() === id) status.textContent = err.message;
    }).then(function () { busy = false; });
  });
})();
