// The annotation page: an answer is stored as it is picked, moves fetch the next item, no page reloads.
(function () {
  "use strict";
  // saved: the answers the server holds for the item shown, as answers() writes them; failed: a
  // save did not get through, so the answers on the page may be the only copy.
  var state = { item: JSON.parse(document.getElementById("first-item").textContent), accepted: {}, saved: {},
                failed: false, leaving: false };
  var $ = function (id) { return document.getElementById(id); };
  var schemes = Array.prototype.slice.call(document.querySelectorAll("fieldset.scheme"));
  // A label's colour: the page's Content-Security-Policy refuses style attributes, not styles set here.
  document.querySelectorAll("#answers [data-color]").forEach(function (el) { el.style.setProperty("--label-color", el.dataset.color); });

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
  // Span questions mark the item's text, or each field that carries span_target (a dialogue as its
  // lines, "Speaker: text").
  function showText(item) {
    var box = $("item-text"), marked = [], focused = targets.indexOf(tgt);
    if (focused >= 0 && document.activeElement !== tgt.el) focused = -1;
    if (!item.fields || !item.fields.length) {
      box.textContent = item.text;
      if (!spanSets.length && (item.keywords || []).length) markKeywords(box, item.text, item.keywords);
      marked.push({ el: box, text: item.text, field: "", name: "the text" });
    } else {
      box.textContent = "";
      item.fields.forEach(function (f) {
        var part = document.createElement("section"), head = document.createElement("h3");
        var body = window.PotatoFields.draw(f);
        part.className = "field field-" + (f.type || "text");
        if (f.span_target) part.dataset.spanTarget = "1";
        head.textContent = f.label;
        part.appendChild(head);
        part.appendChild(body);
        box.appendChild(part);
        if (f.span_target) {
          marked.push({ el: body, text: f.text, field: f.span_field || "", name: f.label || f.span_field || "the text",
                        turns: turnLines(f.turns) });
        }
      });
    }
    if (spanSets.length) setTargets(marked, focused);
  }

  // Keyword highlights (upstream's keyword_highlights_file): the admin's words, boxed in the text in
  // their label's colour. On a page with span questions they are drawn with the spans (collectDrawn),
  // under them and never clicked away; here, on a plain text, they are the only marks.
  function keywordColor(k) {
    var fs = spanSets.filter(function (f) { return f.dataset.schema === k.schema; })[0];
    return fs ? labelColor(fs, k.label) : "var(--accent)";
  }
  function keywordTitle(k) {
    return k.keyword ? (k.ai ? "AI keyword: " : "Keyword: ") + k.keyword + " \u2192 " + k.label : k.label;
  }
  function markKeywords(box, text, keywords) {
    var cps = Array.from(text), at = 0, frag = document.createDocumentFragment();
    keywords.forEach(function (k) {
      if (k.start < at) return;
      frag.appendChild(document.createTextNode(cps.slice(at, k.start).join("")));
      var mark = document.createElement("mark");
      mark.className = "hl keyword";
      mark.dataset.label = k.label;
      mark.style.setProperty("--c", keywordColor(k));
      mark.title = keywordTitle(k);
      mark.textContent = cps.slice(k.start, k.end).join("");
      frag.appendChild(mark);
      at = k.end;
    });
    frag.appendChild(document.createTextNode(cps.slice(at).join("")));
    box.replaceChildren(frag);
  }

  // A dialogue's text to mark is its lines, "Speaker: text": where each line starts, how long its
  // "Speaker:" is (in code points) and its speaker's shade, so that it is drawn as the turns are when
  // nothing is marked on them (fields.js), one shaded box per turn with the speaker in bold.
  function turnLines(turns) {
    var out = [], at = 0, speakers = [];
    (turns || []).forEach(function (turn) {
      var head = turn.speaker ? Array.from(turn.speaker).length + 1 : 0, shade = "";
      if (turn.speaker) {
        if (speakers.indexOf(turn.speaker) < 0) speakers.push(turn.speaker);
        shade = "speaker-" + (speakers.indexOf(turn.speaker) % 6);
      }
      out.push({ start: at, head: head, shade: shade });
      at += head + (turn.speaker ? 1 : 0) + Array.from(turn.text).length + 1;
    });
    return out;
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
    if (window.PotatoCodebook && item.codebook) window.PotatoCodebook.apply(item.codebook);
    state.item = item;
    state.accepted = {};
    showProgress(item, true);
    $("item-number").textContent = item.number + " of " + item.total;
    $("item-meta").dataset.item = item.id;  // the id is shown only where the study shows ids (#item-id)
    if ($("item-id")) $("item-id").textContent = item.id;
    showText(item);
    schemes.forEach(function (fs) {
      if (fs.dataset.type === "turns") window.PotatoTurns.place(fs, (item.turn_slots || {})[fs.dataset.schema]);
    });
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, type = fs.dataset.type, value = item.labels[name];
      if (type === "span") SP[name].rejected = {};
      setValue(fs, type, value);
      if (type === "span") return;  // its suggestion box is drawn with its spans (showSpanState)
      highlightOptions(fs, (item.highlights || {})[name]);
      helpNote(fs, (item.ai_pending || []).indexOf(name) >= 0 ? "Asking the AI\u2026" : "");
      clearHelp(fs);
      var box = fs.querySelector(".suggestion"), s = (item.suggestions || {})[name];
      // A question asked on each step gets an answer per step: each is written on its step. A
      // comparison's is the option the model prefers, by its name on the page.
      var said = type === "turns" ? window.PotatoTurns.suggest(fs, s)
        : s && fs.classList.contains("pairwise") ? preferred(fs, s.label)
        : s && (Array.isArray(s.label) ? s.label.join(", ") : s.label);
      if (s && said) {
        box.hidden = false;
        box.querySelector(".s-label").textContent = said;
        describeModel(box, s, sure(s.confidence));
      } else {
        box.hidden = true;
      }
    });
    updateVisibility();
    state.saved = answers();
    state.failed = false;
    setStatus(note || "");
    if ((item.ai_pending || []).length) askForHelp(item, Date.now());
    keepInAddress(item);
    window.scrollTo(0, 0);
  }

  function preferred(fs, value) {
    var option = Array.prototype.filter.call(fs.querySelectorAll("label.option input"), function (input) {
      return input.value === value;
    })[0];
    var shown = option ? option.closest("label").querySelector("span").textContent : value;
    return value === "tie" ? shown : shown + " is better";
  }

  // Option highlighting (ai_support): the model's most likely options stay as they are, the others
  // are dimmed, every one still a click away; an item the model has no ranking for is left plain.
  var dim = $("annotate").dataset.aiDim;  // the page's CSP allows no inline style: the opacity is set here
  if (dim) $("annotate").style.setProperty("--ai-dim", dim);
  function highlightOptions(fs, bright) {
    fs.querySelectorAll("label.option").forEach(function (option) {
      var input = option.querySelector("input"), on = !!bright && bright.indexOf(input.value) >= 0;
      option.classList.toggle("ai-highlighted", on);
      option.classList.toggle("ai-dimmed", !!bright && !on);
      if (on) option.title = "One of the model's most likely answers";
      else if (option.title === "One of the model's most likely answers") option.removeAttribute("title");
    });
  }

  // Help from an LLM server (ai_support) comes after the item: the page asks again each second for
  // the questions still pending, for as long as the server's calls may take, then says "no hint".
  // It never holds the item back: the annotator can answer and move on meanwhile.
  var aiWait = Number($("annotate").dataset.aiWait || 0) * 1000;
  function helpNote(fs, text) {
    var note = fs.querySelector(".ai-note");
    if (!note) return;
    note.textContent = text;
    note.hidden = !text;
  }
  function askForHelp(item, started) {
    window.setTimeout(function () {
      if (state.item !== item) return;  // moved on: that item's help is asked for when it is shown again
      var late = Date.now() - started > aiWait;
      request("GET", "/api/ai-help/" + encodeURIComponent(item.id)).then(function (got) {
        if (state.item !== item) return;
        var pending = got.pending || [];
        item.highlights = item.highlights || {};
        item.ai_pending = late ? [] : pending;
        schemes.forEach(function (fs) {
          var name = fs.dataset.schema, bright = (got.highlights || {})[name];
          if (!fs.querySelector(".ai-note")) return;
          if (bright) {
            item.highlights[name] = bright;
            highlightOptions(fs, bright);
            helpNote(fs, "");
          } else if (late || pending.indexOf(name) < 0) {
            helpNote(fs, "No hint for this question.");
          }
        });
        if (pending.length && !late) askForHelp(item, started);
      }, function () {
        if (state.item !== item) return;
        schemes.forEach(function (fs) { if (!(item.highlights || {})[fs.dataset.schema]) helpNote(fs, fs.querySelector(".ai-note") ? "No hint for this question." : ""); });
      });
    }, 1000);
  }

  // Hints, keywords and rationales (ai_support's include): asked for with a button, answered by the
  // LLM server in the background; the page asks again each second until the answer is there.
  function showHelp(fs, kind, answer) {
    var box = fs.querySelector(".ai-answer");
    box.textContent = "";
    function line(head, text) {
      var p = document.createElement("p");
      if (head) { var b = document.createElement("strong"); b.textContent = head; p.appendChild(b); p.appendChild(document.createTextNode(" ")); }
      p.appendChild(document.createTextNode(text));
      box.appendChild(p);
    }
    if (!answer) line("", "No hint for this question.");
    else if (kind === "hint") {
      line("Hint:", answer.hint);
      if (answer.suggestion) {
        line("Suggestion:", answer.suggestion);
        fs.querySelectorAll("label.option").forEach(function (option) {
          option.classList.toggle("ai-suggested", option.querySelector("input").value === answer.suggestion);
        });
      }
    } else if (kind === "keyword") {
      answer.keywords.forEach(function (k) { line(k.label + ":", k.words.join(", ")); });
      showAiKeywords(answer.marks || []);
    } else {
      answer.rationales.forEach(function (r) { line(r.label ? r.label + ":" : "Reasoning:", r.reasoning); });
      if (!answer.rationales.length) line("", "No hint for this question.");
    }
    box.hidden = false;
  }
  // The LLM's keywords boxed in the text beside the admin's own (they go with the item shown).
  function showAiKeywords(marks) {
    var item = state.item;
    if (!item || !marks.length) return;
    item.keywords = (item.keywords || []).filter(function (k) { return !k.ai; }).concat(marks)
      .sort(function (a, b) { return a.start - b.start || b.end - a.end; });
    if (spanSets.length) drawSpans();
    else if (!item.fields || !item.fields.length) markKeywords($("item-text"), item.text, item.keywords);
  }
  function askTool(fs, button, item, started) {
    var kind = button.dataset.kind, box = fs.querySelector(".ai-answer");
    request("GET", "/api/ai-help/" + encodeURIComponent(item.id) + "?schema=" + encodeURIComponent(fs.dataset.schema)
            + "&kind=" + encodeURIComponent(kind)).then(function (got) {
      if (state.item !== item) return;
      if (got.state === "ready") return showHelp(fs, kind, got.answer);
      if (got.state === "pending" && Date.now() - started < aiWait) {
        box.textContent = "Asking the AI\u2026";
        box.hidden = false;
        return window.setTimeout(function () { askTool(fs, button, item, started); }, 1000);
      }
      showHelp(fs, kind, null);
    }, function () { if (state.item === item) showHelp(fs, kind, null); });
  }
  schemes.forEach(function (fs) {
    fs.querySelectorAll(".ai-tool").forEach(function (button) {
      button.addEventListener("click", function () {
        // The last answer goes at once: one left up while the next is asked for reads as its answer.
        var box = fs.querySelector(".ai-answer");
        box.textContent = "Asking the AI\u2026";
        box.hidden = false;
        askTool(fs, button, state.item, Date.now());
      });
    });
  });
  function clearHelp(fs) {
    var box = fs.querySelector(".ai-answer");
    if (box) { box.textContent = ""; box.hidden = true; }
    fs.querySelectorAll(".ai-suggested").forEach(function (o) { o.classList.remove("ai-suggested"); });
  }

  // The item shown is in the address (?item=<id>), so a reload shows it again, a skipped one too.
  // Replaced, never pushed: moving between items adds no history entries, Back leaves the page.
  function keepInAddress(item) {
    try {
      var url = new URL(window.location.href);
      if (url.searchParams.get("item") === item.id) return;
      url.searchParams.set("item", item.id);
      history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    } catch (e) { /* an address the browser will not rewrite: a reload then starts where a sign-in does */ }
  }

  // "Save & next" with nothing picked saves nothing: it reads "Skip" then (both names take the
  // button's place at once, so it does not change size under the mouse). A required question
  // cannot be skipped: there the button keeps its name and asks for the answer.
  function nothingPicked(a) {
    return !schemes.some(function (fs) { return !fs.hidden && !unanswered(fs, a[fs.dataset.schema]); });
  }

  function nameSaveButton() {
    var a = answers(), btn = $("save-next"), skip = nothingPicked(a) && !missingRequired(a).length;
    if (btn.classList.contains("skip") === skip && btn.title) return;
    btn.classList.toggle("skip", skip);
    btn.title = skip ? "Nothing is picked: skip this item, leaving it unlabelled (Enter or \u2192)"
      : "Save and go to the next item (Enter or \u2192)";
  }

  // A suggestion is named by how sure its model is and when it was trained, never by the run's id.
  function percent(c) { return typeof c === "number" ? Math.round(c * 100) + "%" : ""; }
  function sure(c) { return typeof c === "number" ? percent(c) + " sure" : ""; }

  function modelDate(s, long) {
    if (typeof s.trained_at !== "number") return "";
    var d = new Date(s.trained_at * 1000);
    return long ? d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })
      : d.toLocaleDateString(undefined, { day: "numeric", month: "short" });
  }

  function describeModel(box, s, conf) {
    var when = modelDate(s, false);
    box.querySelector(".s-conf").textContent = conf;
    box.querySelector(".s-when").textContent = when ? "model of " + when : "";
    box.title = "A model trained on this project's labels" + (when ? " (" + modelDate(s, true) + ")" : "")
      + " suggests this. It is not your answer until you accept it.";
  }

  // One reader and one writer per kind of field, so every scheme type is saved and shown the same way.
  function field(fs) { return fs.querySelector("textarea, select, input[type=text], input[type=range], input[type=number]"); }

  // Labels taken from each item (upstream's dynamic_labels): each place shows the item's label, or
  // nothing where the item offers fewer; the choice is the label itself.
  function relabel(fs) {
    var offered = (state.item.dynamic_labels || {})[fs.dataset.schema] || [];
    fs.querySelectorAll("label.option").forEach(function (option, n) {
      var input = option.querySelector("input"), shown = option.querySelector("span");
      option.hidden = n >= offered.length;
      input.value = n < offered.length ? offered[n] : "";
      if (shown) { shown.textContent = n < offered.length ? offered[n] : ""; }
    });
  }

  function setValue(fs, type, value) {
    if (fs.dataset.dynamic) { relabel(fs); }
    if (type === "turns") {
      window.PotatoTurns.set(fs, value);
    } else if (type === "justification") {  // {reasons: [...], rationale: "..."}
      var given = value && typeof value === "object" ? value : {};
      fs.querySelectorAll("input[type=checkbox]").forEach(function (box) {
        box.checked = Array.isArray(given.reasons) && given.reasons.indexOf(box.value) >= 0;
      });
      fs.querySelector("textarea").value = given.rationale || "";
      rationaleCount(fs);
    } else if (window.PotatoWidgets.handles(type)) {
      window.PotatoWidgets.set(fs, type, value, state.item);
    } else if (type === "rows") {  // an answer on each row: {dimension or option: answer}
      fs.querySelectorAll("[data-dim]").forEach(function (row) {
        row.querySelectorAll("input").forEach(function (input) {
          input.checked = !!value && typeof value === "object" && value[row.dataset.dim] === input.value;
        });
      });
    } else if (type === "span") {
      var st = SP[fs.dataset.schema];
      st.answered = Array.isArray(value);
      // A span in a field this question no longer marks (its span_target taken away) cannot be shown
      // or sent back: the server would refuse the whole answer.
      st.spans = st.answered ? value.filter(function (s) { return marks(fs, fieldOf(s)); }).map(function (s) {
        var out = { start: s.start, end: s.end, label: s.label };
        if (s.field) out.field = s.field;
        if (s.run_id) out.run_id = s.run_id;
        return out;
      }) : [];
    } else if (type === "soft") {
      var given = value && typeof value === "object" ? value : null;
      fs.dataset.touched = given ? "1" : "";
      softRows(fs).forEach(function (row, k, rows) {  // untouched: an even split, shown as not yet given
        var share = given ? given[row.dataset.label] : Number(fs.querySelector(".soft").dataset.total) / rows.length;
        row.querySelector("input").value = String(share);
      });
      showShares(fs);
    } else if (type === "slider" || type === "number") {
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
    if (type === "turns") return window.PotatoTurns.get(fs);
    if (type === "justification") {
      var reasons = Array.prototype.map.call(fs.querySelectorAll("input:checked"), function (i) { return i.value; });
      var rationale = fs.querySelector("textarea").value;
      var why = {};
      if (reasons.length) why.reasons = reasons;
      if (rationale) why.rationale = rationale;
      return why;
    }
    if (window.PotatoWidgets.handles(type)) return window.PotatoWidgets.get(fs, type);
    if (type === "rows") {
      var choices = {};
      fs.querySelectorAll("[data-dim]").forEach(function (row) {
        var picked = row.querySelector("input:checked");
        if (picked) choices[row.dataset.dim] = picked.value;
      });
      return choices;
    }
    if (type === "span") {
      var st = SP[fs.dataset.schema];
      return st.answered ? canonSpans(st.spans) : null;  // [] is an answer: nothing to mark
    }
    if (type === "soft") {
      if (!fs.dataset.touched) return null;  // the even split it starts from is no one's answer
      var shares = {};
      softRows(fs).forEach(function (row) { shares[row.dataset.label] = Number(row.querySelector("input").value); });
      return shares;
    }
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

  // A soft label: a share of the total for each label. Moving one share moves the others, in
  // proportion to what they hold above their least, so that the shares always add up to the total;
  // whole numbers, the remainder going to the largest fractions.
  function softRows(fs) { return Array.prototype.slice.call(fs.querySelectorAll(".soft-row")); }

  function rebalance(fs, moved) {
    var box = fs.querySelector(".soft"), total = Number(box.dataset.total), least = Number(box.dataset.least);
    var rows = softRows(fs), others = rows.filter(function (row) { return row.querySelector("input") !== moved; });
    var top = total - least * others.length, value = Math.min(Math.max(Number(moved.value), least), top);
    moved.value = String(value);
    var spare = total - value - least * others.length;
    var held = others.map(function (row) { return Math.max(0, Number(row.querySelector("input").value) - least); });
    var sum = held.reduce(function (a, b) { return a + b; }, 0);
    var exact = held.map(function (h) { return sum > 0 ? spare * h / sum : spare / others.length; });
    var whole = exact.map(Math.floor), left = spare - whole.reduce(function (a, b) { return a + b; }, 0);
    exact.map(function (x, k) { return [x - whole[k], k]; }).sort(function (a, b) { return b[0] - a[0]; })
      .slice(0, Math.round(left)).forEach(function (pair) { whole[pair[1]] += 1; });
    others.forEach(function (row, k) { row.querySelector("input").value = String(least + whole[k]); });
  }

  function showShares(fs) {
    var total = Number(fs.querySelector(".soft").dataset.total), given = !!fs.dataset.touched;
    softRows(fs).forEach(function (row) {
      var value = Number(row.querySelector("input").value), bar = row.querySelector(".soft-bar");
      row.querySelector(".soft-value").textContent = given ? String(value) : "\u2013";
      if (bar) bar.style.transform = "scaleX(" + (given && total ? value / total : 0) + ")";
    });
    fs.querySelector(".soft-total").textContent = given ? "Together " + total + " of " + total + "."
      : "Not set: move a share to give one.";
  }

  var holds = window.PotatoConditions.holds;  // display_logic, as potato/study/conditions.py decides it

  function updateVisibility() {
    var current = {};
    schemes.forEach(function (fs) {
      var logic = fs.dataset.logic ? JSON.parse(fs.dataset.logic) : null;
      if (logic) {
        var results = logic.conditions.map(function (c) { return holds(c, current[c.schema]); });
        fs.hidden = !(logic.any ? results.some(Boolean) : results.every(Boolean));
        if (fs.dataset.type === "turns") window.PotatoTurns.show(fs);
      }
      current[fs.dataset.schema] = fs.hidden ? null : getValue(fs);
    });
    if (spanSets.length) redrawIfShownChanged();
    nameSaveButton();
  }

  function answers() {
    var out = {};
    schemes.forEach(function (fs) { out[fs.dataset.schema] = fs.hidden ? null : getValue(fs); });
    return out;
  }

  // The schemes marked required that have no answer yet, by their question.
  function missingRequired(a) {
    return schemes.filter(function (fs) { return fs.dataset.required && !fs.hidden && unanswered(fs, a[fs.dataset.schema]); })
      .map(function (fs) { return fs.querySelector("legend").firstChild.textContent.trim(); });
  }

  // An empty object is no answer either: a question asked per turn with no turn answered.
  function isEmpty(value) {
    return value === null || value === undefined || value === "" || (Array.isArray(value) && value.length === 0)
      || (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0);
  }

  // No spans is an answer to a span question ("Nothing to mark"); elsewhere an empty list is none.
  // A justification's rationale counts its characters toward the least it needs.
  function rationaleCount(fs) {
    var box = fs.querySelector("textarea[data-min]"), line = fs.querySelector(".rationale-count");
    if (!box || !line) return;
    var n = box.value.trim().length, least = Number(box.dataset.min);
    line.textContent = n + " of at least " + least + " characters";
  }
  document.addEventListener("input", function (ev) {
    var fs = ev.target.closest && ev.target.closest("fieldset[data-type=justification]");
    if (fs) rationaleCount(fs);
  });

  // A question answered row by row (dimensions, a multirate's options) is answered once each row is;
  // a required justification once its rationale is long enough.
  function unanswered(fs, value) {
    if (fs.dataset.type === "justification") {
      var box = fs.querySelector("textarea");
      return isEmpty(value) || box.value.trim().length < Math.max(Number(box.dataset.min || 0), 1);
    }
    if (fs.dataset.type === "span") return value === null || value === undefined;
    if (fs.dataset.type === "rows") return isEmpty(value) || Object.keys(value).length < fs.querySelectorAll("[data-dim]").length;
    return isEmpty(value);
  }


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
  // Forward with nothing picked is a skip: nothing is stored (the item stays unlabelled, and
  // "Unlabelled" finds it again), and the status line says which item was skipped.
  function saveAndGo(go) {
    var a = answers();
    var hasAnswer = schemes.some(function (fs) { return !unanswered(fs, a[fs.dataset.schema]); });
    var missing = missingRequired(a), forward = go === "next" || go === "next_unlabelled";
    if (missing.length && (hasAnswer || forward)) {
      setStatus("Answer \u201c" + missing.join("\u201d, \u201c") + "\u201d first: it is required.", true);
      return true;
    }
    var open = window.PotatoWidgets.unallocated(a);
    if (open.length) {
      setStatus("Allocate every point of \u201c" + open.join("\u201d, \u201c") + "\u201d first: they must add up to the total.", true);
      return true;
    }
    var skipped = forward && nothingPicked(a) ? state.item : null;
    if (!dirty()) return move(go, skipped);
    setStatus("Saving…");
    return request("POST", "/api/label", { id: state.item.id, labels: a, accepted: state.accepted, go: go })
      .then(function (data) { shown(data, skipped); return true; },
            function (err) { return failed(err, true, { id: state.item.id, labels: a, accepted: state.accepted }); });
  }

  function move(go, skipped) {
    return request("GET", "/api/move?go=" + encodeURIComponent(go) + "&from=" + state.item.position)
      .then(function (data) { shown(data, skipped); return true; }, function (err) { return failed(err, false); });
  }

  function shown(data, skipped) {
    render(data.item, data.note);
    if (skipped && !data.note && data.item.id !== skipped.id) {
      setStatus("Skipped item " + skipped.number + " (" + skipped.id + "): nothing was picked, so it stays unlabelled.");
    }
  }

  function gotoNumber(n) {
    if (!n) return;
    var box = $("goto-number");
    box.value = "";
    box.blur();  // the keys belong to the page again: "1" picks a label, not a digit in the box
    later(function () { return saveAndGo("item:" + n); }, true);
  }

  // Accepting is picking: the suggestion is stored as the annotator's answer, with its run. A span
  // question takes the model's spans not rejected, each with the run, while it has no answer yet.
  function acceptSuggestions() {
    var any = false, spansTaken = false;
    schemes.forEach(function (fs) {
      var name = fs.dataset.schema, s = (state.item.suggestions || {})[name];
      if (!s) return;
      if (fs.dataset.type === "span") {
        var offered = suggestedSpans(fs);
        if (fs.hidden || !suggestionOf(fs) || SP[name].answered || (!offered.length && s.label.length)) return;
        SP[name].spans = offered.map(function (x) {
          var out = { start: x.start, end: x.end, label: x.label, run_id: s.run_id };
          if (x.field) out.field = x.field;
          return out;
        });
        SP[name].answered = true;
        state.accepted[name] = s.run_id;
        any = spansTaken = true;
        return;
      }
      any = true;
      setValue(fs, fs.dataset.type, s.label);
      state.accepted[name] = s.run_id;
    });
    if (!any) return true;
    updateVisibility();
    if (spansTaken) { drawSpans(); spanSets.forEach(showSpanState); }
    return store(snapshot(), "Suggestion accepted and saved as your label: " + enterKey() + " for the next item.");
  }

  schemes.forEach(function (fs) {
    // Changing an accepted answer by hand makes it the annotator's own again.
    fs.addEventListener("change", function () {
      delete state.accepted[fs.dataset.schema];
      updateVisibility();
      saveSoon();
      // A triage pick is the item's verdict: the next item comes at once (upstream's auto_advance).
      if (fs.dataset.autoAdvance && getValue(fs)) later(function () { return saveAndGo("next"); }, true);
    });
    fs.addEventListener("input", function (ev) {
      fs.dataset.touched = "1";
      if (fs.dataset.type === "soft") { rebalance(fs, ev.target); showShares(fs); }
      var out = fs.querySelector(".slider-value");
      if (out) out.textContent = field(fs).value;
      updateVisibility();
    });
    var btn = fs.querySelector(".s-accept");
    if (btn) btn.addEventListener("click", function () { later(acceptSuggestions, true); });
  });
  // -- Spans: stretches of the item's text marked with a label -----------------------------------
  // Offsets are code points into the text as shown (Python's str indices, as the server counts
  // them), never UTF-16 units: an emoji before a span must not move it. The text stays text nodes;
  // each change redraws it once, as one fragment cut at every span boundary.
  var spanSets = schemes.filter(function (fs) { return fs.dataset.type === "span"; });
  var SP = {};  // by schema: the annotator's spans, whether they are an answer ([] is), rejected suggestions
  // The texts being marked (the item's, or each field with span_target: a premise and a hypothesis),
  // each with its code points, where each starts in UTF-16, its keyboard caret and selection anchor
  // (code points), what its last drawing showed and where its text nodes start. tgt is the one the
  // keyboard and the last selection are in; a span names its text's field ("" the item's own).
  var targets = [], tgt = newTarget({ el: null, text: "", field: "", name: "" }), shownKey = "";
  var armed = null;  // { fs, label }: a label clicked with no text selected marks the next selection
  var pointerDown = false, downAt = null, suppressClick = false, captured = null, selTimer = null;
  var WORD = /[\p{L}\p{N}\p{M}_]/u, SPACE = /\s/u;

  function newTarget(m) {
    var t = { el: m.el, field: m.field, name: m.name, text: m.text || "", cps: [], u16: [0], caret: 0, anchor: null,
              drawn: [], starts: new WeakMap(), turns: m.turns || [] };
    t.cps = Array.from(t.text);
    for (var i = 0, at = 0; i < t.cps.length; i++) { at += t.cps[i].length; t.u16.push(at); }
    return t;
  }
  function fieldOf(s) { return s.field || ""; }
  function targetOf(field) { return targets.filter(function (t) { return t.field === field; })[0] || null; }
  function targetAt(node) { return targets.filter(function (t) { return t.el && t.el.contains(node); })[0] || null; }
  function spanKey(s) { return fieldOf(s) + ":" + s.start + ":" + s.end + ":" + s.label; }
  function spanText(s) { var t = targetOf(fieldOf(s)); return t ? t.text.slice(t.u16[s.start], t.u16[s.end]) : ""; }
  function quoted(s) { var t = spanText(s); return "\u201c" + (t.length > 40 ? t.slice(0, 39) + "\u2026" : t) + "\u201d"; }
  function byPosition(a, b) {
    var fa = fieldOf(a), fb = fieldOf(b);
    if (fa !== fb) return fa < fb ? -1 : 1;
    return a.start - b.start || b.end - a.end || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0);
  }

  // The spans as the server stores them (by position, each with its text), so a saved answer and
  // the one on the page compare equal; a span accepted from a suggestion keeps its run.
  function canonSpans(list) {
    return list.slice().sort(byPosition).map(function (s) {
      var out = { start: s.start, end: s.end, label: s.label, text: spanText(s) };
      if (s.field) out.field = s.field;
      if (s.run_id) out.run_id = s.run_id;
      return out;
    });
  }

  function spanOk(s, fs) {
    var t = !!s && marks(fs, fieldOf(s)) ? targetOf(fieldOf(s)) : null;
    return !!t && typeof s.start === "number" && typeof s.end === "number" && s.start % 1 === 0 && s.end % 1 === 0
      && 0 <= s.start && s.start < s.end && s.end <= t.cps.length && Object.prototype.hasOwnProperty.call(SP[fs.dataset.schema].colors, s.label);
  }

  // Whether a span question marks this field (a scheme's target_field narrows it to one).
  function marks(fs, field) { return SP[fs.dataset.schema].fields.indexOf(field) >= 0; }

  function labelColor(fs, label) { return SP[fs.dataset.schema].colors[label] || "var(--accent)"; }

  function suggestionOf(fs) {
    var s = (state.item.suggestions || {})[fs.dataset.schema];
    return s && Array.isArray(s.label) ? s : null;
  }

  // The model's spans on offer, rejected or not: none once the annotator has an answer.
  function offeredSpans(fs) {
    var st = SP[fs.dataset.schema], s = suggestionOf(fs);
    if (!s || st.answered) return [];
    return s.label.filter(function (x) { return spanOk(x, fs); });
  }

  // The model's spans still on offer: none they rejected.
  function suggestedSpans(fs) {
    var st = SP[fs.dataset.schema];
    return offeredSpans(fs).filter(function (x) { return !st.rejected[spanKey(x)]; });
  }

  // The elements whose text is marked: the item's text, or the fields instance_display marks. The
  // text the keyboard was in keeps the focus when the next item's is drawn in its place.
  function setTargets(marked, focused) {
    var els = marked.map(function (m) { return m.el; });
    targets.forEach(function (t) {
      if (!t.el || els.indexOf(t.el) >= 0) return;
      ["tabindex", "role", "aria-label", "aria-readonly", "aria-multiline"].forEach(function (a) { t.el.removeAttribute(a); });
      t.el.classList.remove("span-target", "kbd");
    });
    targets = marked.map(newTarget);
    tgt = targets[0] || newTarget({ el: null, text: "", field: "", name: "" });
    shownKey = "";
    targets.forEach(function (t) {
      var el = t.el;
      el.tabIndex = 0;
      el.setAttribute("role", "textbox");
      el.setAttribute("aria-readonly", "true");
      el.setAttribute("aria-multiline", "true");
      el.setAttribute("aria-label", (targets.length > 1 ? t.name + ", text to mark" : "Text to mark")
        + ": select with Shift and the arrow keys, then press a label's key; "
        + "Delete removes the span at the caret, Escape clears the selection");
      el.classList.add("span-target");
    });
    if (focused >= 0 && targets[focused]) {
      tgt = targets[focused];
      if (document.activeElement !== tgt.el) tgt.el.focus();
    }
  }

  // Every span drawn now in text t, of every span question shown: the annotator's, then the model's.
  function collectDrawn(t) {
    var out = [], here = function (x) { return fieldOf(x) === t.field; };
    spanSets.forEach(function (fs) {
      if (fs.hidden) return;
      var st = SP[fs.dataset.schema];
      st.spans.filter(here).forEach(function (x) { out.push({ fs: fs, s: x, own: true, color: labelColor(fs, x.label) }); });
      // A rejected suggestion stays where it was, struck through (a click undoes it): the text
      // around it does not move, so the next suggestion never slides under the pointer.
      offeredSpans(fs).filter(here).forEach(function (x) {
        out.push({ fs: fs, s: x, own: false, rejected: !!st.rejected[spanKey(x)], color: labelColor(fs, x.label),
                   conf: x.confidence });
      });
    });
    if (t.field === "" && state.item) {
      (state.item.keywords || []).forEach(function (k) {
        out.push({ s: { start: k.start, end: k.end, label: k.label }, keyword: k, own: false, color: keywordColor(k) });
      });
    }
    out.forEach(function (d, i) { d.id = i; });
    return out;
  }

  function keyboardRange() {
    if (!tgt.el || !tgt.el.classList.contains("kbd") || tgt.anchor === null || tgt.anchor === tgt.caret) return null;
    return { start: Math.min(tgt.anchor, tgt.caret), end: Math.max(tgt.anchor, tgt.caret), t: tgt };
  }

  function tagFor(d) {
    var el = document.createElement("span"), label = d.s.label, show = d.fs.dataset.showLabels !== "false";
    el.className = "hl-end " + kindOf(d);
    el.dataset.id = String(d.id);
    el.style.setProperty("--c", d.color);
    el.setAttribute("aria-hidden", "true");
    if (d.own) {
      el.dataset.tag = (show ? label + " " : "") + "\u00d7";
      el.title = "Remove: " + label + " " + quoted(d.s);
    } else {
      el.dataset.tag = "model" + (show ? " \u00b7 " + label : "") + (d.conf !== undefined ? " " + percent(d.conf) : "");
      el.title = modelTitle(d);
    }
    return el;
  }

  function kindOf(d) { return d.keyword ? "keyword" : d.own ? "own" : d.rejected ? "rejected" : "model"; }

  function modelTitle(d) {
    var what = d.s.label + " " + quoted(d.s) + (d.conf !== undefined ? " (" + sure(d.conf) + ")" : "");
    return d.rejected ? "Rejected: the model suggested " + what + ". Click to undo"
      : "Model suggests " + what + ": click to reject it; a accepts the model's spans";
  }

  // Draw each text once per change: one DocumentFragment cut at every span boundary, the caret and
  // the keyboard selection; a stretch covered by several spans gets one underline per span and the
  // innermost one's colour.
  function drawSpans() {
    if (spanSets.length) targets.forEach(drawTarget);
  }

  function drawTarget(t) {
    if (!t.el) return;
    var u = t.u16, n = t.cps.length, drawn = collectDrawn(t), sel = t === tgt ? keyboardRange() : null;
    var caretAt = t.el.classList.contains("kbd") ? t.caret : -1;  // the caret is the keyboard's
    var cuts = {}, endsAt = {};
    cuts[0] = cuts[n] = true;
    t.turns.forEach(function (line) { cuts[line.start] = cuts[line.start + line.head] = true; });
    // A dialogue's turns each get a box (li.turn) that holds its stretch of the text; else the text is one run.
    var boxes = t.turns.map(function (line) {
      var li = document.createElement("li");
      li.className = "turn" + (line.shade ? " " + line.shade : "");
      return li;
    });
    var boxAt = function (p) {
      for (var k = t.turns.length - 1; k >= 0; k--) if (t.turns[k].start <= p) return boxes[k];
      return boxes.length ? boxes[0] : frag;
    };
    if (caretAt >= 0) cuts[caretAt] = true;
    if (sel) cuts[sel.start] = cuts[sel.end] = true;
    drawn.forEach(function (d) {
      cuts[d.s.start] = cuts[d.s.end] = true;
      (endsAt[d.s.end] = endsAt[d.s.end] || []).push(d);
    });
    var points = Object.keys(cuts).map(Number).sort(function (a, b) { return a - b; });
    var frag = document.createDocumentFragment(), starts = new WeakMap();
    // The innermost span on top; of equal ones the annotator's, then the model's, then a rejected one.
    var rank = function (d) { return d.own ? 0 : d.rejected ? 2 : 1; };
    var kw = function (d) { return d.keyword ? 1 : 0; };  // a keyword box is drawn under every span
    var inner = function (a, b) { return kw(a) - kw(b) || (a.s.end - a.s.start) - (b.s.end - b.s.start) || rank(a) - rank(b) || a.id - b.id; };
    for (var i = 0; i < points.length; i++) {
      var p = points[i];
      var box = boxAt(p);
      if (p === caretAt) {
        var caret = document.createElement("span");
        caret.className = "caret";
        caret.setAttribute("aria-hidden", "true");
        box.appendChild(caret);
      }
      if (i + 1 === points.length) break;
      var q = points[i + 1], node = document.createTextNode(t.text.slice(u[p], u[q])), leaf = node;
      starts.set(node, p);
      if (t.turns.some(function (line) { return line.start <= p && q <= line.start + line.head; })) {  // "Speaker:"
        leaf = document.createElement("b");
        leaf.className = "speaker";
        leaf.appendChild(node);
      }
      var cover = drawn.filter(function (d) { return d.s.start <= p && d.s.end >= q; }).sort(inner);
      var selected = sel && sel.start <= p && sel.end >= q, wrap = null;
      if (cover.length) {
        var top = cover[0];
        wrap = document.createElement("mark");
        wrap.className = "hl " + kindOf(top) + (cover.length > 1 ? " nested" : "");
        wrap.dataset.ids = cover.map(function (d) { return d.id; }).join(" ");
        wrap.style.setProperty("--c", top.color);
        wrap.style.boxShadow = cover.map(function (d, k) { return "inset 0 -" + (3 * (k + 1)) + "px 0 0 " + d.color; }).join(", ");
        wrap.title = top.keyword ? keywordTitle(top.keyword)
          : top.own ? "Remove: " + top.s.label + " " + quoted(top.s) + (cover.length > 1 ? " (each span's \u00d7 tag removes that one)" : "")
          : modelTitle(top);
      } else if (selected) {
        wrap = document.createElement("span");
      }
      if (wrap) {
        if (selected) wrap.classList.add("ksel");
        wrap.appendChild(leaf);
        box.appendChild(wrap);
      } else {
        box.appendChild(leaf);
      }
      (endsAt[q] || []).sort(inner).forEach(function (d) { if (!d.keyword) box.appendChild(tagFor(d)); });
    }
    boxes.forEach(function (li) { frag.appendChild(li); });
    t.drawn = drawn;
    t.starts = starts;
    t.el.replaceChildren(frag);
    if (t.el.classList.contains("kbd") && document.activeElement === t.el) caretIntoView();
  }

  // The caret kept on screen in a long text: once a frame (keys repeat faster), after the browser
  // lays the text out for that frame anyway, never by forcing a layout per key.
  var scrollPending = false;
  function caretIntoView() {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(function () {
      scrollPending = false;
      var c = tgt.el && tgt.el.querySelector(".caret");
      if (!c || document.activeElement !== tgt.el) return;
      var r = c.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) c.scrollIntoView({ block: "nearest" });
    });
  }

  // Redraw only when a question was shown or hidden (updateVisibility runs on every keystroke in a box).
  function redrawIfShownChanged() {
    var shown = spanSets.map(function (fs) { return fs.hidden ? "0" : "1"; }).join("");
    if (shown !== shownKey) { shownKey = shown; drawSpans(); spanSets.forEach(showSpanState); }
  }

  // What the question says under its labels, and its suggestion box.
  function showSpanState(fs) {
    var st = SP[fs.dataset.schema], n = st.spans.length, line = fs.querySelector(".span-state");
    // Links between spans (widgets.js) follow the spans marked now, with their words.
    document.dispatchEvent(new CustomEvent("potato:spans", { detail: { schema: fs.dataset.schema, spans: canonSpans(st.spans) } }));
    var text = !st.answered ? "No spans marked yet: select text, then " + (touchScreen() ? "tap" : "pick") + " a label."
      : n === 0 ? "Nothing to mark: saved as your answer. Marking a span replaces it."
      : n + (n === 1 ? " span" : " spans") + " marked: click one to remove it.";
    if (armed && armed.fs === fs) text = armed.label + " is on: text you select now is marked " + armed.label + ". " + text;
    line.textContent = text;
    var none = fs.querySelector(".span-none");
    none.setAttribute("aria-pressed", st.answered && n === 0 ? "true" : "false");
    none.disabled = n > 0;
    none.title = n > 0 ? "Remove the spans first: this item has spans marked" : "This item has nothing to mark: saved as your answer";
    fs.querySelectorAll(".span-label").forEach(function (b) {
      b.setAttribute("aria-pressed", armed && armed.fs === fs && armed.label === b.dataset.label ? "true" : "false");
    });
    var box = fs.querySelector(".suggestion"), s = suggestionOf(fs);
    if (!s || st.answered) { box.hidden = true; return; }
    var offered = offeredSpans(fs), left = suggestedSpans(fs).length;
    box.hidden = false;
    // The same words after a rejection (the list says which are rejected): the lines below stay put.
    box.querySelector(".s-label").textContent = !s.label.length ? "nothing to mark"
      : offered.length + (offered.length === 1 ? " span" : " spans");
    describeModel(box, s, s.label.length ? "" : sure(s.confidence));  // each span has its own, in the list
    showSpanList(fs, box.querySelector(".s-spans"), offered);
    box.querySelector(".s-accept").disabled = s.label.length > 0 && left === 0;
  }

  // The suggested spans, one line each with its own confidence. A line stays where it is when its
  // span is rejected (its button then reads Undo), so the next line's button never moves up under
  // the pointer; the lines are built once per item and only marked afterwards.
  function showSpanList(fs, list, offered) {
    var st = SP[fs.dataset.schema], key = state.item.id + " " + offered.map(spanKey).join(" ");
    if (list.dataset.key !== key) {
      list.dataset.key = key;
      list.replaceChildren();
      offered.forEach(function (x) { list.appendChild(spanLine(fs, x)); });
    }
    Array.prototype.forEach.call(list.children, function (li) {
      var rejected = !!st.rejected[li.dataset.span];
      li.classList.toggle("rejected", rejected);
      li.querySelector(".s-reject").setAttribute("aria-label", (rejected ? "Undo the rejection of " : "Reject ") + li.dataset.name);
    });
  }

  function spanLine(fs, x) {
    var li = document.createElement("li"), btn = document.createElement("button"), what = document.createElement("span");
    var label = document.createElement("strong"), conf = document.createElement("span");
    li.dataset.span = spanKey(x);
    li.dataset.name = x.label + " " + quoted(x);
    li.style.setProperty("--c", labelColor(fs, x.label));
    btn.type = "button";
    btn.className = "ghost s-reject";
    ["Reject", "Undo"].forEach(function (text, i) {
      var part = document.createElement("span");
      part.className = i ? "if-rejected" : "if-offered";
      part.textContent = text;
      btn.appendChild(part);
    });
    btn.addEventListener("click", function (ev) { if (!repeatedClick(ev, true)) toggleRejected(fs, x); });
    what.className = "s-span";
    label.textContent = x.label;
    what.appendChild(label);
    what.appendChild(document.createTextNode(" " + quoted(x)));
    conf.className = "s-span-conf";
    conf.textContent = sure(x.confidence);
    li.appendChild(btn);
    li.appendChild(what);
    li.appendChild(conf);
    return li;
  }

  // The second click of a double click is no second reject (or undo, or removal); on a suggestion,
  // neither is a click within a double click's interval of the last reject or undo.
  var lastToggle = 0;
  function repeatedClick(ev, suggestion) {
    if (ev.detail === 0) return false;  // Enter or Space on a focused button: the keyboard's
    if (ev.detail > 1) return true;
    if (!suggestion) return false;
    var now = Date.now(), soon = now - lastToggle < 500;
    if (!soon) lastToggle = now;
    return soon;
  }

  // A rejected suggestion only leaves the offer (nothing is stored); an undo puts it back.
  function toggleRejected(fs, x) {
    var st = SP[fs.dataset.schema], k = spanKey(x);
    if (st.rejected[k]) delete st.rejected[k]; else st.rejected[k] = true;
    drawSpans();
    spanSets.forEach(showSpanState);
  }

  // A change of the annotator's spans: shown, and saved at once (as a pick is).
  function spansChanged(fs) {
    delete state.accepted[fs.dataset.schema];
    updateVisibility();
    drawSpans();
    spanSets.forEach(showSpanState);
    saveSoon();
  }

  // -- Where a selection is, in code points of a text -------------------------------------------
  function domPointToCp(t, node, offset) {
    var whole = document.createRange();
    whole.selectNodeContents(t.el);
    var where;
    try { where = whole.comparePoint(node, offset); } catch (e) { return null; }
    if (where < 0) return 0;
    if (where > 0) return t.cps.length;
    if (node.nodeType === 3) {
      var base = t.starts.get(node);
      if (base !== undefined) return base + Array.from(node.data.slice(0, offset)).length;
    }
    // Between elements (or in a tag, which holds no text): the first text node at or after the point.
    var point = document.createRange();
    point.setStart(node, offset);
    var walk = document.createTreeWalker(t.el, NodeFilter.SHOW_TEXT), n;
    while ((n = walk.nextNode())) {
      if (t.starts.has(n) && point.comparePoint(n, 0) >= 0) return t.starts.get(n);
    }
    return t.cps.length;
  }

  // The mouse's (or a finger's) selection, cut to the text it starts in (or the first it covers):
  // parts outside that text are ignored.
  function domRange() {
    var sel = window.getSelection();
    if (!sel || !sel.rangeCount || sel.isCollapsed) return null;
    var r = sel.getRangeAt(0);
    var t = targetAt(r.startContainer) || targets.filter(function (x) { return x.el && r.intersectsNode(x.el); })[0];
    if (!t) return null;
    var start = domPointToCp(t, r.startContainer, r.startOffset), end = domPointToCp(t, r.endContainer, r.endOffset);
    return start === null || end === null || start >= end ? null : { start: start, end: end, t: t };
  }

  // Snap to the text: whitespace around a selection is not part of the span.
  function trimmed(r) {
    if (!r) return null;
    var a = r.start, b = r.end, cps = r.t.cps;
    while (a < b && SPACE.test(cps[a])) a++;
    while (b > a && SPACE.test(cps[b - 1])) b--;
    return a < b ? { start: a, end: b, t: r.t } : null;
  }

  function currentSelection() { return trimmed(keyboardRange() || domRange()); }

  function clearSelection() {
    targets.forEach(function (t) { t.anchor = null; });
    var sel = window.getSelection();
    if (sel && sel.rangeCount && targets.some(function (t) { return t.el && sel.getRangeAt(0).intersectsNode(t.el); })) {
      sel.removeAllRanges();
    }
  }

  // -- Marking and removing ------------------------------------------------------------------------
  // The selection a label is given to is used up at once (the caret goes to its end), even when the
  // mark waits its turn behind keys typed before it: a selection made meanwhile is another one.
  function takeSelection(range) {
    clearSelection();
    tgt = range.t;
    tgt.caret = range.end;
  }

  function markSpan(fs, label, range) {
    if (!range || fs.hidden) return false;
    var st = SP[fs.dataset.schema], span = { start: range.start, end: range.end, label: label };
    var note = fs.querySelector(".span-state"), field = range.t.field;
    if (field) span.field = field;
    if (!marks(fs, field)) {
      drawSpans();
      setStatus("This question marks " + st.fields.map(function (f) { var t = targetOf(f); return t ? t.name : f; }).join(", ")
        + ", not " + range.t.name + ": select the text there.", true);
      return false;
    }
    if (st.spans.some(function (s) { return spanKey(s) === spanKey(span); })) {
      drawSpans();
      note.textContent = label + " " + quoted(span) + " is marked already.";
      return false;
    }
    if (fs.dataset.allowOverlapping !== "true") {
      var clash = st.spans.filter(function (s) {
        return fieldOf(s) === field && s.start < span.end && span.start < s.end && !(s.start === span.start && s.end === span.end);
      })[0];
      if (clash) {
        drawSpans();
        setStatus(quoted(span) + " overlaps " + clash.label + " " + quoted(clash) + ", and this question marks each "
          + "stretch of text once: remove that span first (click it), then mark again.", true);
        return false;
      }
      // The same stretch with another label: the new label replaces the old.
      st.spans = st.spans.filter(function (s) { return !(fieldOf(s) === field && s.start === span.start && s.end === span.end); });
    }
    st.spans.push(span);
    st.answered = true;
    spansChanged(fs);
    return true;
  }

  function removeDrawn(d) {
    var st = SP[d.fs.dataset.schema];
    if (!d.own) { toggleRejected(d.fs, d.s); return; }
    st.rejected[spanKey(d.s)] = true;  // a removed accepted span is not offered again
    var i = st.spans.indexOf(d.s);
    if (i < 0) return;
    st.spans.splice(i, 1);
    // The last span gone is no answer: "Nothing to mark" says that one on purpose.
    if (!st.spans.length) st.answered = false;
    spansChanged(d.fs);
  }

  // Delete (forward) or Backspace: the innermost span at the caret, the annotator's before the model's.
  function removeAtCaret(back) {
    var c = tgt.caret, inner = function (a, b) { return (a.s.end - a.s.start) - (b.s.end - b.s.start) || (a.own ? -1 : 1); };
    var hit = function (fwd) {
      return tgt.drawn.filter(function (d) {
        return !d.rejected && (fwd ? d.s.start <= c && c < d.s.end : d.s.start < c && c <= d.s.end);
      }).sort(inner)[0];
    };
    var d = hit(!back) || hit(back);
    if (d) removeDrawn(d); else setStatus("No span at the caret to remove.");
  }

  function arm(fs, label) {
    armed = armed && armed.fs === fs && armed.label === label ? null : { fs: fs, label: label };
    spanSets.forEach(showSpanState);
  }

  // True when a selection was there for the label that is on.
  function armedMark() {
    if (!armed || armed.fs.hidden) return false;
    var r = trimmed(domRange());
    if (!r) return false;
    takeSelection(r);
    markSpan(armed.fs, armed.label, r);
    return true;  // the selection was used, marked or not
  }

  // -- The keyboard on the text: a caret, Shift to select, Delete to remove ------------------------
  function keyboardMode() {
    targets.forEach(function (t) { if (t !== tgt && t.el) { t.el.classList.remove("kbd"); t.anchor = null; } });
    if (tgt.el.classList.contains("kbd")) return;
    tgt.el.classList.add("kbd");
    var sel = window.getSelection();  // where the mouse left off, the keys go on
    if (sel && sel.rangeCount && sel.getRangeAt(0).intersectsNode(tgt.el)) {
      var a = domPointToCp(tgt, sel.anchorNode, sel.anchorOffset), f = domPointToCp(tgt, sel.focusNode, sel.focusOffset);
      if (f !== null) { tgt.caret = f; tgt.anchor = a !== null && a !== f ? a : null; }
      sel.removeAllRanges();
    }
  }

  function wordStep(from, forward) {
    var cps = tgt.cps, i = from;
    if (forward) {
      while (i < cps.length && !WORD.test(cps[i])) i++;
      while (i < cps.length && WORD.test(cps[i])) i++;
    } else {
      while (i > 0 && !WORD.test(cps[i - 1])) i--;
      while (i > 0 && WORD.test(cps[i - 1])) i--;
    }
    return i;
  }

  // Keys on the focused text; true: the key was the text's (the page does nothing more with it).
  function textKey(ev) {
    var k = ev.key, n = tgt.cps.length;
    if (ev.metaKey) return false;
    if (k === "ArrowLeft" || k === "ArrowRight" || k === "Home" || k === "End") {
      keyboardMode();
      var forward = k === "ArrowRight", word = ev.ctrlKey || ev.altKey, sel = keyboardRange();
      var to = k === "Home" ? 0 : k === "End" ? n : word ? wordStep(tgt.caret, forward)
        : Math.max(0, Math.min(n, tgt.caret + (forward ? 1 : -1)));
      if (ev.shiftKey) {
        if (tgt.anchor === null) tgt.anchor = tgt.caret;
      } else {
        if (sel && !word && (k === "ArrowLeft" || k === "ArrowRight")) to = forward ? sel.end : sel.start;  // as text boxes do
        tgt.anchor = null;
      }
      tgt.caret = to;
      drawSpans();
      return true;
    }
    if (ev.ctrlKey || ev.altKey) return false;
    if (k === "Delete" || k === "Backspace") { keyboardMode(); removeAtCaret(k === "Backspace"); return true; }
    if (k === "Escape") {
      clearSelection();
      if (armed) arm(armed.fs, armed.label);
      drawSpans();
      return true;
    }
    return false;
  }

  // A span label's key: marks the selection, if there is one; without one it does nothing.
  function spanLabelKey(key) {
    var btn = null;
    spanSets.forEach(function (fs) {
      if (!fs.hidden && !btn) btn = Array.prototype.filter.call(fs.querySelectorAll(".span-label[data-key]"), function (b) { return b.dataset.key === key; })[0] || null;
    });
    return btn;
  }

  spanSets.forEach(function (fs) {
    var colors = {};
    fs.querySelectorAll(".span-label").forEach(function (btn) { colors[btn.dataset.label] = btn.dataset.color; });
    SP[fs.dataset.schema] = { spans: [], answered: false, rejected: {}, colors: colors,
                              fields: JSON.parse(fs.dataset.fields || '[""]') };
    fs.querySelectorAll(".span-label").forEach(function (btn) {
      // The selection as it is before the click takes it away (a tap on a phone does).
      btn.addEventListener("pointerdown", function () { captured = { id: state.item.id, range: currentSelection() }; });
      btn.addEventListener("mousedown", function (ev) { ev.preventDefault(); });  // keeps the selection and the focus
      btn.addEventListener("click", function () {
        var r = currentSelection();
        if (!r && captured && captured.id === state.item.id) r = captured.range;
        captured = null;
        if (r) { takeSelection(r); markSpan(fs, btn.dataset.label, r); } else { arm(fs, btn.dataset.label); }
      });
    });
    fs.querySelector(".span-none").addEventListener("click", function () {
      var st = SP[fs.dataset.schema];
      if (st.spans.length) return;
      st.answered = true;
      spansChanged(fs);
    });
  });

  if (spanSets.length) {
    document.addEventListener("mousedown", function (ev) {
      suppressClick = false;
      var t = targetAt(ev.target);
      if (!t) return;
      tgt = t;
      pointerDown = true;
      downAt = { x: ev.clientX, y: ev.clientY };
      tgt.anchor = null;  // the keyboard's selection gives way to the mouse's (hidden until the next drawing)
      tgt.el.classList.remove("kbd");
    });
    // The text clicked or dragged over with the mouse lets go of the focus (as a clicked button does):
    // the arrow keys move between items again, and a label's key marks the mouse's selection.
    // Tab gives the text the keyboard's caret.
    document.addEventListener("mouseup", function () {
      if (!pointerDown) return;
      pointerDown = false;
      if (document.activeElement === tgt.el) tgt.el.blur();
      if (armedMark()) suppressClick = true;  // the click that ends this selection removes nothing
    });
    document.addEventListener("touchstart", function (ev) {
      var t = targetAt(ev.target);
      if (t) { tgt = t; pointerDown = true; t.anchor = null; t.el.classList.remove("kbd"); }
    }, { passive: true });
    document.addEventListener("touchend", function () {
      if (!pointerDown) return;
      pointerDown = false;
      if (document.activeElement === tgt.el) tgt.el.blur();
      setTimeout(armedMark, 0);  // the selection a long press makes is there once the touch ends
    });
    // A phone's selection handles move without touch events reaching the page: the selection
    // marked is the one that has stopped changing for a moment.
    document.addEventListener("selectionchange", function () {
      if (!armed) return;
      clearTimeout(selTimer);
      selTimer = setTimeout(function () { if (!pointerDown) armedMark(); }, 700);
    });
    // One click on a highlight removes it (a model's span: rejects it); a drag or a selection is no click.
    document.addEventListener("click", function (ev) {
      var t = targetAt(ev.target);
      if (!t) return;
      if (suppressClick) { suppressClick = false; return; }
      var sel = window.getSelection();
      if (sel && !sel.isCollapsed) return;
      if (downAt && ev.detail > 0 && Math.abs(ev.clientX - downAt.x) + Math.abs(ev.clientY - downAt.y) > 6) return;
      var tag = ev.target.closest(".hl-end"), mark = ev.target.closest("mark.hl");
      var ids = tag ? [tag.dataset.id] : mark ? mark.dataset.ids.split(" ") : [];
      var d = ids.map(function (id) { return t.drawn[Number(id)]; }).filter(function (x) { return x && !x.keyword; })[0];
      if (d && !repeatedClick(ev, !d.own)) removeDrawn(d);
    });
    document.addEventListener("focusin", function (ev) {
      var t = targets.filter(function (x) { return x.el === ev.target; })[0];
      if (t && !pointerDown) { tgt = t; keyboardMode(); drawSpans(); }
    });
  }

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

  // The labels' keys are looked up when a key is pressed: a code added to the codebook meanwhile
  // (codebook.js) comes with a key of its own.
  function keyed() { return Array.prototype.slice.call(document.querySelectorAll("input[data-key]")); }
  var PAGE_KEYS = ["Enter", "ArrowRight", "ArrowLeft", "a", "g"];
  // Whether a label of some question has this key (shown or hidden): then the page's own use of the
  // letter (a, g, d; upstream configs may give those to labels) gives way.
  function labelOwns(key) {
    return document.querySelector('input[data-key="' + CSS.escape(key) + '"], .span-label[data-key="' + CSS.escape(key) + '"]') !== null;
  }

  document.addEventListener("keydown", function (ev) {
    // The focused text takes the caret keys (arrows, Home, End, Delete, Escape), not the page.
    var focusedText = targets.filter(function (x) { return x.el === ev.target; })[0];
    if (focusedText) tgt = focusedText;
    if (focusedText && textKey(ev)) { ev.preventDefault(); return; }
    var tag = (ev.target.tagName || "").toLowerCase();
    // Typing into a field is typing; the label choices (radios, checkboxes) are the page's own.
    if (tag === "textarea" || tag === "select" || (tag === "input" && ev.target.type !== "radio" && ev.target.type !== "checkbox")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    // Enter or Space on a button or link the keyboard moved to does that button ("← Previous", "Sign out").
    if ((ev.key === "Enter" || ev.key === " ") && (tag === "button" || tag === "a" || tag === "summary")) return;
    if (ev.key === "Escape" && armed) { arm(armed.fs, armed.label); return; }
    var spanBtn = spanSets.length ? spanLabelKey(ev.key) : null;
    if (spanBtn) {
      // A span label's key marks the text selected now (with the mouse or the keyboard); with
      // nothing selected it does nothing. Its turn comes after the keys typed before it.
      var range = currentSelection(), id = state.item.id, fs = spanBtn.closest("fieldset");
      ev.preventDefault();
      if (!range) return;
      takeSelection(range);
      drawSpans();
      later(function () { if (state.item.id === id) markSpan(fs, spanBtn.dataset.label, range); return true; }, true);
      return;
    }
    var label = labelOwns(ev.key);
    if (!label && ev.key === "d") { window.potatoToggleTheme(); return; }
    if (!label && (PAGE_KEYS.indexOf(ev.key) < 0 || (ev.key === "g" && !$("goto-number")))) return;
    ev.preventDefault();
    var key = ev.key, shift = ev.shiftKey;
    later(function () { return pressed(key, shift); }, true);
  });

  // What a key does, when its turn comes (the item shown is then the one it was meant for).
  function pressed(key, shift) {
    // A hidden question's keys do nothing: it is not being asked. A label's key is the label's alone,
    // also where it is a letter the page has a use for (a, g, d: upstream configs may give those out).
    var input = keyed().filter(function (i) { return i.dataset.key === key && !i.closest("fieldset").hidden; })[0];
    if (input) {
      if (input.type === "radio") input.checked = true; else input.checked = !input.checked;
      input.dispatchEvent(new Event("change", { bubbles: true }));  // its save comes next
      return true;
    }
    if (labelOwns(key)) return true;
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
