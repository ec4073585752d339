// An item's fields as instance_display describes them: an image (zoom by click or Enter), a dialogue
// (speakers shaded), code (highlighted), a table, a document (its tree of harmless elements), a PDF
// (a paged viewer). Everything is built with createElement and textContent: nothing in an item is
// ever read as HTML, so no item can run script in the page.
(function () {
  "use strict";

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  function image(f) {
    var img = el("img", "field-image");
    img.src = f.src;
    img.alt = f.alt || "";
    img.loading = "lazy";
    if (f.max_width) { img.style.maxWidth = f.max_width; }
    if (f.zoomable) {
      var wrap = el("button", "zoom");
      wrap.type = "button";
      wrap.title = "Zoom in (click or Enter); again to zoom out";
      wrap.setAttribute("aria-pressed", "false");
      wrap.appendChild(img);
      wrap.addEventListener("click", function () {
        var on = !wrap.classList.contains("zoomed");
        wrap.classList.toggle("zoomed", on);
        wrap.setAttribute("aria-pressed", String(on));
      });
      return wrap;
    }
    return img;
  }

  // A sound or a video in the browser's own player, which plays it and runs nothing in it.
  function played(tag) {
    return function (f) {
      var player = el(tag, "field-" + tag);
      player.src = f.src;
      player.preload = "metadata";
      player.controls = f.controls;
      player.loop = f.loop;
      if (f.autoplay) { player.muted = true; player.autoplay = true; }
      if (f.max_width) { player.style.maxWidth = f.max_width; }
      player.setAttribute("aria-label", f.label);
      player.appendChild(document.createTextNode("This browser cannot play this " + tag + "."));
      return player;
    };
  }

  function dialogue(f) {
    // show_turn_numbers: the list's own markers, which are no part of the text (span offsets stay put).
    var list = el("ol", "dialogue" + (f.numbered ? " numbered" : "")), speakers = [];
    f.turns.forEach(function (t, i) {
      var li = el("li", "turn");
      li.dataset.stepIndex = String(i);  // where a question asked on each turn goes (turns.js)
      if (t.speaker) {
        var n = speakers.indexOf(t.speaker);
        if (n < 0) { speakers.push(t.speaker); n = speakers.length - 1; }
        li.classList.add("speaker-" + (n % 6));
        li.appendChild(el("strong", "speaker", t.speaker));
        li.appendChild(document.createTextNode(" "));
      }
      li.appendChild(el("span", "said", t.text));
      list.appendChild(li);
    });
    return list;
  }

  // A small highlighter for the languages annotators mostly see: comments, strings, numbers and
  // keywords get a class; everything else stays plain text.
  var KEYWORDS = ("and as assert async await break case catch class const continue def default del do elif else " +
    "except export extends false finally fn for from func function if import in interface is lambda let match " +
    "new nil none not null or package pass private protected public raise return self static struct super switch " +
    "this throw true try type typeof var void while with yield").split(" ");
  var TOKEN = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\b\d+(?:\.\d+)?\b|\b[A-Za-z_]\w*\b)/g;

  function code(f) {
    var pre = el("pre", "code"), box = el("code");
    if (f.language) { box.dataset.language = f.language; }
    var text = f.code, last = 0, m;
    TOKEN.lastIndex = 0;
    while ((m = TOKEN.exec(text)) !== null) {
      if (m.index > last) { box.appendChild(document.createTextNode(text.slice(last, m.index))); }
      var t = m[0], cls = null;
      if (/^(\/\/|#|\/\*)/.test(t)) { cls = "tok-comment"; }
      else if (/^["'`]/.test(t)) { cls = "tok-string"; }
      else if (/^\d/.test(t)) { cls = "tok-number"; }
      else if (KEYWORDS.indexOf(t.toLowerCase()) >= 0) { cls = "tok-keyword"; }
      box.appendChild(cls ? el("span", cls, t) : document.createTextNode(t));
      last = m.index + t.length;
    }
    if (last < text.length) { box.appendChild(document.createTextNode(text.slice(last))); }
    pre.appendChild(box);
    return pre;
  }

  function table(f) {
    var wrap = el("div", "table-wrap"), t = el("table", "spreadsheet"), head = el("thead"), row = el("tr");
    f.header.forEach(function (h) { var th = el("th", null, h); th.scope = "col"; row.appendChild(th); });
    head.appendChild(row);
    t.appendChild(head);
    var body = el("tbody");
    f.rows.forEach(function (r) {
      var tr = el("tr");
      r.forEach(function (c) { tr.appendChild(el("td", null, c)); });
      body.appendChild(tr);
    });
    t.appendChild(body);
    wrap.appendChild(t);
    if (f.more) { wrap.appendChild(el("p", "muted", f.more + " more rows are not shown here.")); }
    return wrap;
  }

  function node(n) {
    if (typeof n === "string") { return document.createTextNode(n); }
    var e = document.createElement(n[0]);  // a tag the server allowed (potato/display/fields.py)
    if (n[1].href) { e.href = n[1].href; e.rel = "noopener noreferrer"; e.target = "_blank"; }
    n[2].forEach(function (c) { e.appendChild(node(c)); });
    return e;
  }

  function documentField(f) {
    var box = el("div", "document");
    f.blocks.forEach(function (b) { box.appendChild(node(b)); });
    return box;
  }

  // The frame has no sandbox attribute: with one, Chromium refuses to show a PDF at all. The file
  // sandboxes itself instead (its Content-Security-Policy: sandbox, potato/server/media.py), and the
  // server draws this field only for a PDF file (any other file named in a pdf field is shown as text).
  function pdf(f) {
    var box = el("div", "pdf"), bar = el("div", "pdf-bar"), frame = el("iframe", "pdf-page");
    var page = 1, pages = f.pages || null;
    var prev = el("button", "ghost pdf-prev", "← Page"), next = el("button", "ghost pdf-next", "Page →");
    var where = el("span", "pdf-where muted");
    prev.type = next.type = "button";
    frame.title = f.label || "PDF";
    function show() {
      frame.src = f.src + "#page=" + page;
      where.textContent = "Page " + page + (pages ? " of " + pages : "");
      prev.disabled = page <= 1;
      next.disabled = !!pages && page >= pages;
    }
    prev.addEventListener("click", function () { if (page > 1) { page -= 1; show(); } });
    next.addEventListener("click", function () { if (!pages || page < pages) { page += 1; show(); } });
    bar.appendChild(prev);
    bar.appendChild(where);
    bar.appendChild(next);
    var open = el("a", "pdf-open", "Open the PDF");
    open.href = f.src;
    open.target = "_blank";
    open.rel = "noopener";
    bar.appendChild(open);
    box.appendChild(bar);
    box.appendChild(frame);
    show();
    return box;
  }

  var DRAW = { image: image, audio: played("audio"), video: played("video"), dialogue: dialogue, code: code, spreadsheet: table, document: documentField, pdf: pdf };

  // The element showing field f's content; plain text for a text field (and anything unknown).
  function draw(f) {
    var make = DRAW[f.type];
    if (make) { return make(f); }
    return el("div", null, f.text || "");
  }

  // add: another script's types (traces.js), drawn the same way; el: the one element maker they share.
  window.PotatoFields = { draw: draw, add: function (type, make) { DRAW[type] = make; }, el: el };

  // Display-only blocks between the questions (upstream's pure_display) and a codebook page, drawn as a
  // document field is.
  document.querySelectorAll("[data-blocks]").forEach(function (block) {
    block.appendChild(documentField({ blocks: JSON.parse(block.dataset.blocks) }));
  });
}());
