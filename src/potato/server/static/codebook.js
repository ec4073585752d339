// The codebook tray: the codes with their definitions, and (codebook_mode: extensible) a form that
// adds a code for everyone. Every item the page shows brings the codes added so far; any the page
// lacks become choices of their scheme at once, so a code one annotator adds is there for the
// others with their next item.
// A code comes with its key where one of 1-9 was free (the server gives every page the same one);
// annotate.js looks keys up when one is pressed, so the key picks the code at once.
(function () {
  "use strict";
  var tray = document.getElementById("codebook-tray");
  var toggle = document.getElementById("codebook-toggle");
  var revision = -1;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function addChoice(scheme, code) {
    var fs = document.querySelector('fieldset.scheme[data-schema="' + CSS.escape(scheme) + '"]');
    if (!fs || fs.querySelector('input[value="' + CSS.escape(code.name) + '"]')) { return; }
    var options = fs.querySelector(".options");
    if (!options) { return; }
    var label = el("label", "option");
    var input = el("input");
    input.type = fs.dataset.type === "multiselect" ? "checkbox" : "radio";
    input.name = scheme;
    input.value = code.name;
    if (code.definition) { label.title = code.definition; }
    label.appendChild(input);
    if (code.key && !document.querySelector('[data-key="' + CSS.escape(code.key) + '"]')) {
      input.dataset.key = code.key;
      label.appendChild(el("kbd", null, code.key));
    }
    label.appendChild(el("span", null, code.name));
    label.classList.add("added-code");
    options.appendChild(label);
  }

  function addEntry(scheme, code) {
    if (!tray) { return; }
    var list = tray.querySelector('.codebook-scheme[data-schema="' + CSS.escape(scheme) + '"] dl');
    if (!list) { return; }
    var known = Array.prototype.some.call(list.querySelectorAll("dt"), function (dt) { return dt.textContent === code.name; });
    if (known) { return; }
    list.appendChild(el("dt", null, code.name));
    list.appendChild(el("dd", null, code.definition || "No definition given."));
  }

  function apply(book) {
    if (!book || book.revision === revision) { return; }
    revision = book.revision;
    Object.keys(book.codes || {}).forEach(function (scheme) {
      book.codes[scheme].forEach(function (code) { addChoice(scheme, code); addEntry(scheme, code); });
    });
  }

  if (toggle && tray) {
    toggle.addEventListener("click", function () {
      tray.hidden = !tray.hidden;
      toggle.setAttribute("aria-expanded", String(!tray.hidden));
      if (!tray.hidden) { tray.focus(); }
    });
    tray.tabIndex = -1;
  }

  var form = document.getElementById("add-code");
  if (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var status = document.getElementById("code-status");
      var scheme = document.getElementById("code-scheme").value;
      var name = document.getElementById("code-name").value;
      var definition = document.getElementById("code-definition").value;
      fetch("/api/codebook", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ scheme: scheme, name: name, definition: definition })
      }).then(function (r) {
        return r.json().then(function (data) { return { ok: r.ok, data: data }; });
      }).then(function (res) {
        if (!res.ok) { status.textContent = res.data.error || "The code was not added."; return; }
        addChoice(scheme, res.data.code);
        addEntry(scheme, res.data.code);
        revision = res.data.revision;
        status.textContent = "Added \u201c" + res.data.code.name + "\u201d: it is a choice for everyone now.";
        form.reset();
      }, function () { status.textContent = "The server did not answer; the code was not added. Try again."; });
    });
  }

  window.PotatoCodebook = { apply: apply };
}());
