// The done page: copy the completion code with one click (or Enter), and go back to the platform
// by itself after the delay the study set. No inline script: the page's CSP allows /static only.
(function () {
  "use strict";
  var box = document.getElementById("completion-code");
  var hint = document.getElementById("code-hint");
  if (box) {
    box.addEventListener("click", function () {
      var code = box.textContent.trim();
      var said = function (text) { if (hint) { hint.textContent = text; } };
      var fallback = function () {
        // Without the clipboard API (plain http, an old browser): select the code for Ctrl+C.
        var range = document.createRange();
        range.selectNodeContents(box);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        said("The code is selected: press Ctrl+C (⌘C) to copy it.");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(code).then(function () { said("Copied!"); }, fallback);
      } else {
        fallback();
      }
    });
  }
  var auto = document.getElementById("auto-redirect");
  if (auto) {
    var left = Math.max(0, parseInt(auto.getAttribute("data-delay-ms"), 10) || 0);
    var shown = document.getElementById("countdown");
    var go = function () {
      var form = document.getElementById("return-form");
      var link = document.getElementById("return-link");
      if (form) { form.submit(); } else if (link) { window.location.assign(link.href); }
    };
    var tick = function () {
      if (left <= 0) { go(); return; }
      if (shown) { shown.textContent = String(Math.ceil(left / 1000)); }
      var step = Math.min(1000, left);
      left -= step;
      window.setTimeout(tick, step);
    };
    tick();
  }
}());
