// Questions asked on each turn of a trace (upstream's turn_level): the question's own widget, from
// its <template>, put under each turn the server says it is asked on (item.turn_slots: the field's place,
// and each turn's id and place in the drawn list). A question in a drawer sits behind a button on
// each turn. A turn the page cannot put it beside (a dialogue whose text spans mark is redrawn as
// they change) gets its copy in the question's own box, under a line that says which turn it is.
// annotate.js reads and fills the answers through get and set, as {turn id: answer}. A process
// reward's steps are listed in its own box with their whole text unless it is put beside the trace;
// marked by their first wrong step, one mark sets the steps around it.
(function () {
  "use strict";

  var el = window.PotatoFields.el;  // fields.js: createElement with a class and text, never HTML

  function slotsOf(fs) {
    return Array.prototype.slice.call(document.querySelectorAll(".turn-slot")).filter(function (s) {
      return s.dataset.schema === fs.dataset.schema;
    });
  }

  // Where turn `index` of the field drawn `at`th is, or null (not drawn, or redrawn as spans change).
  function turnElement(at, index) {
    var part = document.querySelectorAll("#item-text section.field")[at];
    if (!part || part.dataset.spanTarget) { return null; }
    return part.querySelector('[data-step-index="' + index + '"]');
  }

  function slider(slot) {
    var out = slot.querySelector(".slider-value"), input = slot.querySelector("input[type=range]");
    if (out && input) { out.textContent = slot.dataset.touched ? input.value : "not set"; }
  }

  // A discussion act that answers another turn (consensus tracking's linked acts) names that turn.
  function refBox(fs, slot, turn, turns) {
    var linked = JSON.parse(fs.dataset.linked || "[]");
    if (!linked.length) { return; }
    var box = el("select", "turn-ref");
    box.setAttribute("aria-label", fs.dataset.turnLabel + ": the turn it answers");
    box.appendChild(new Option("answers which turn?", ""));
    turns.forEach(function (other, k) {
      if (other.id !== turn.id) { box.appendChild(new Option("Turn " + (k + 1) + ": " + other.caption.slice(0, 60), other.id)); }
    });
    var showRef = function () {
      var act = slot.querySelector("input:checked");
      box.hidden = !act || linked.indexOf(act.value) < 0;
      if (box.hidden) { box.value = ""; }
    };
    slot.addEventListener("change", showRef);
    slot.dataset.linked = fs.dataset.linked;
    slot.appendChild(box);
    slot.showRef = showRef;
    showRef();
  }

  function widget(fs, turn, number) {
    var slot = el("div", "turn-slot"), tpl = fs.querySelector("template.turn-widget");
    slot.dataset.schema = fs.dataset.schema;
    slot.dataset.turn = turn.id;
    slot.dataset.turnType = fs.dataset.turnType;
    var body = tpl.content.cloneNode(true);
    // Each turn's radios are a group of their own (a step's severity another one).
    body.querySelectorAll("[name]").forEach(function (input) {
      input.name = fs.dataset.schema + "@" + turn.id + (input.dataset.group ? "@" + input.dataset.group : "");
    });
    var label = fs.dataset.turnLabel;
    if (fs.dataset.placement === "drawer") {
      var drawer = el("details", "turn-drawer"), summary = el("summary", null, "\u270e " + label);
      drawer.appendChild(summary);
      drawer.appendChild(body);
      slot.appendChild(drawer);
    } else {
      slot.appendChild(el("span", "turn-label", label));
      slot.appendChild(body);
    }
    slot.querySelectorAll("input, select, textarea").forEach(function (input) {
      var own = input.getAttribute("aria-label");  // a part of a step's verdict says which part it is
      input.setAttribute("aria-label", label + " (" + fs.dataset.turnWord.toLowerCase() + " " + number + ")" +
        (own ? ": " + own : input.value && (input.type === "radio" || input.type === "checkbox") ? ": " + input.value : ""));
    });
    var verdict = slot.querySelector("[data-traj]");
    if (verdict) {  // what went wrong is asked only of a step that is not right
      slot.addEventListener("change", function () { wrongShown(slot); });
    }
    slot.addEventListener("input", function (ev) {
      if (ev.target.type === "range") { slot.dataset.touched = "1"; slider(slot); }
    });
    // The question's box hears every change: annotate.js saves it from there.
    slot.addEventListener("change", function (ev) {
      if (fs.dataset.firstError) { cascade(fs, turn.index, ev.target.value); }
      progress(fs);
      fs.dispatchEvent(new Event("change"));
    });
    slot.dataset.index = String(turn.index);
    return slot;
  }

  // A process reward marked by its first wrong step: a step marked wrong makes every step before it
  // correct and every later one wrong; a step marked correct makes every step before it correct too.
  function cascade(fs, index, value) {
    slotsOf(fs).forEach(function (slot) {
      var at = Number(slot.dataset.index), want = at < index ? "correct" : (value === "incorrect" ? "incorrect" : null);
      if (at === index || want === null) { return; }
      slot.querySelectorAll("input[type=radio]").forEach(function (input) { input.checked = input.value === want; });
    });
  }

  // item.turn_slots' entry for this question: put a copy of its widget under each turn.
  function place(fs, where) {
    slotsOf(fs).forEach(function (s) { s.remove(); });
    var rest = fs.querySelector(".turn-elsewhere");
    rest.textContent = "";
    // A turn is numbered by its place in the trace, a step by its place among the steps asked (the
    // user's task before them is no step, as the trace's own numbers say).
    var steps = fs.dataset.turnWord === "Step";
    ((where && where.turns) || []).forEach(function (turn, k) {
      var listed = fs.dataset.placement === "list", number = steps ? k + 1 : turn.index + 1;
      var slot = widget(fs, turn, number), host = listed ? null : turnElement(where.at, turn.index);
      slot.dataset.number = String(number);
      refBox(fs, slot, turn, where.turns);
      if (host) {
        host.appendChild(slot);
      } else if (listed) {  // a step listed under its question, read there: its whole text
        var step = el("li", "turn-step");
        step.appendChild(el("p", "turn-caption", fs.dataset.turnWord + " " + number));
        step.appendChild(el("div", "turn-step-text", turn.caption));
        step.appendChild(slot);
        rest.appendChild(step);
      } else {
        var item = el("li");
        item.appendChild(el("p", "turn-caption muted", fs.dataset.turnWord + " " + number + ": " + turn.caption));
        item.appendChild(slot);
        rest.appendChild(item);
      }
    });
    rest.hidden = !rest.children.length;
    show(fs);
  }

  function wrongShown(slot) {
    var verdict = slot.querySelector("[data-traj]"), picked = verdictOf(slot);
    verdict.querySelector(".traj-error").hidden = !picked || picked === verdict.dataset.traj;
  }

  function verdictOf(slot) {
    var picked = slot.querySelector("[data-traj] input[type=radio]:not([data-group]):checked");
    return picked ? picked.value : null;
  }

  // A step's verdict: its correctness and, for a step that is not right, what of the rest is given.
  function trajAnswer(slot) {
    var verdict = slot.querySelector("[data-traj]"), correctness = verdictOf(slot);
    if (!correctness) { return null; }
    var out = { correctness: correctness };
    if (correctness === verdict.dataset.traj) { return out; }
    var type = verdict.querySelector(".traj-type"), severity = verdict.querySelector("[data-group=severity]:checked");
    var rationale = verdict.querySelector(".traj-rationale").value;
    if (type && type.value) {
      var parts = type.value.split("::");
      out.error_type = parts[0];
      if (parts[1]) { out.error_subtype = parts[1]; }
    }
    if (severity) { out.severity = severity.value; }
    if (rationale) { out.rationale = rationale; }
    return out;
  }

  function setTraj(slot, answer) {
    var verdict = slot.querySelector("[data-traj]"), has = answer && typeof answer === "object";
    verdict.querySelectorAll("input[type=radio]").forEach(function (input) {
      input.checked = has && (input.dataset.group ? answer.severity === input.value : answer.correctness === input.value);
    });
    var type = verdict.querySelector(".traj-type");
    if (type) { type.value = has && answer.error_type ? answer.error_type + "::" + (answer.error_subtype || "") : ""; }
    verdict.querySelector(".traj-rationale").value = has && answer.rationale || "";
    wrongShown(slot);
  }

  function answerOf(slot) {
    if (slot.querySelector("[data-traj]")) { return trajAnswer(slot); }
    var multi = slot.querySelector("[data-multi]");
    if (multi) {
      var boxes = {}, any = false;
      multi.querySelectorAll("[data-label]").forEach(function (box) {
        if (box.value) { boxes[box.dataset.label] = box.value; any = true; }
      });
      return any ? boxes : null;
    }
    var ref = slot.querySelector(".turn-ref"), act = slot.querySelector("input:checked");
    if (ref) {
      var answers = act && ref.value && JSON.parse(slot.dataset.linked).indexOf(act.value) >= 0;
      return !act ? null : (answers ? { act: act.value, ref: ref.value } : act.value);
    }
    var range = slot.querySelector("input[type=range]");
    if (range) { return slot.dataset.touched ? Number(range.value) : null; }
    var number = slot.querySelector("input[type=number]");
    if (number) { return number.value === "" ? null : Number(number.value); }
    var box = slot.querySelector("textarea, select, input[type=text]");
    if (box) { return box.value || null; }
    var checked = Array.prototype.map.call(slot.querySelectorAll("input:checked"), function (i) { return i.value; });
    if (slot.querySelector("input[type=checkbox]")) { return checked.length ? checked : null; }
    return checked.length ? checked[0] : null;
  }

  function get(fs) {
    var out = {};
    slotsOf(fs).forEach(function (slot) {
      var answer = answerOf(slot);
      if (answer !== null) { out[slot.dataset.turn] = answer; }
    });
    return out;
  }

  // The stored answers ({turn id: {value, index, text, ...}}) or the page's own ({turn id: answer}).
  function set(fs, value) {
    var by = value && typeof value === "object" ? value : {};
    slotsOf(fs).forEach(function (slot) {
      var entry = by[slot.dataset.turn];
      var answer = entry && typeof entry === "object" && !Array.isArray(entry) && "value" in entry ? entry.value : entry;
      if (slot.querySelector("[data-traj]")) { setTraj(slot, answer); return; }
      var ref = slot.querySelector(".turn-ref");
      if (ref) {  // an act, or {act, ref}
        var act = answer && typeof answer === "object" ? answer.act : answer;
        slot.querySelectorAll("input[type=radio]").forEach(function (input) { input.checked = input.value === act; });
        slot.showRef();
        ref.value = answer && typeof answer === "object" && answer.ref ? answer.ref : "";
        return;
      }
      var has = answer !== undefined && answer !== null;
      slot.querySelectorAll("[data-label]").forEach(function (box) {
        box.value = has && typeof answer === "object" && answer[box.dataset.label] || "";
      });
      slot.querySelectorAll("input[type=radio], input[type=checkbox]").forEach(function (input) {
        input.checked = has && (Array.isArray(answer) ? answer.indexOf(input.value) >= 0 : input.value === answer);
      });
      slot.querySelectorAll("select, textarea:not([data-label]), input[type=text]:not([data-label]), input[type=number]")
        .forEach(function (box) { box.value = has ? String(answer) : ""; });
      var range = slot.querySelector("input[type=range]");
      if (range) {
        slot.dataset.touched = has ? "1" : "";
        range.value = has ? String(answer) : (range.dataset.start || range.min || "0");
        slider(slot);
      }
    });
    progress(fs);
  }

  // A trajectory's score: what the severities of its wrong steps leave of the most it can score.
  function score(fs, answers) {
    var line = fs.querySelector(".traj-score");
    if (!line) { return; }
    var weights = {}, top = Number(fs.dataset.maxScore), total = top;
    JSON.parse(fs.dataset.severities || "[]").forEach(function (pair) { weights[pair[0]] = pair[1]; });
    Object.keys(answers).forEach(function (id) {
      var a = answers[id];
      if (a && a.severity && weights[a.severity] !== undefined) { total -= Math.abs(weights[a.severity]); }
    });
    line.textContent = "Score: " + Math.max(0, total) + " / " + top;
  }

  function progress(fs) {
    var answers = get(fs);
    score(fs, answers);
    var slots = slotsOf(fs), done = Object.keys(answers).length, line = fs.querySelector(".turn-progress");
    var word = fs.dataset.turnWord.toLowerCase();
    line.textContent = slots.length ? done + " of " + slots.length + " " + word + (slots.length === 1 ? "" : "s") + " answered"
      : "No " + word + " of this item is asked.";
  }

  // A question display_logic hides is hidden on every turn too.
  function show(fs) {
    slotsOf(fs).forEach(function (slot) { slot.hidden = fs.hidden; });
  }

  // A process reward's Reset all: every step's mark taken away, saved as no answer.
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest(".turn-reset");
    if (!button) { return; }
    var fs = button.closest("fieldset");
    slotsOf(fs).forEach(function (slot) {
      slot.querySelectorAll("input:checked").forEach(function (input) { input.checked = false; });
    });
    progress(fs);
    fs.dispatchEvent(new Event("change"));
  });

  // A step classifier's suggestion ({turn id: answer}, with each step's confidence): what the model
  // says is written on each step it answers, and the question's box says it in one line (the first
  // error, where the question is marked by it). Accepting it is annotate.js's, as for any question.
  function shown(answer) {
    if (answer && typeof answer === "object" && !Array.isArray(answer)) { return answer.correctness || answer.act || ""; }
    return Array.isArray(answer) ? answer.join(", ") : String(answer);
  }

  function suggest(fs, s) {
    var label = s && s.label && typeof s.label === "object" ? s.label : {}, sure = (s && s.probabilities) || {};
    var word = fs.dataset.turnWord, firstWrong = null, answered = 0;
    slotsOf(fs).forEach(function (slot) {
      var note = slot.querySelector(".turn-suggestion"), answer = label[slot.dataset.turn];
      if (answer === undefined) { if (note) { note.remove(); } return; }
      if (!note) { note = el("p", "turn-suggestion muted"); slot.appendChild(note); }
      var conf = typeof sure[slot.dataset.turn] === "number" ? " (" + Math.round(sure[slot.dataset.turn] * 100) + "% sure)" : "";
      note.textContent = "Model: " + shown(answer) + conf;
      answered += 1;
      if (shown(answer) === "incorrect" && firstWrong === null) { firstWrong = slot.dataset.number; }
    });
    if (!answered) { return ""; }
    if (fs.dataset.firstError) {
      return firstWrong === null ? "no " + word.toLowerCase() + " is wrong" : word.toLowerCase() + " " + firstWrong + " is the first error";
    }
    return "an answer on " + answered + " " + word.toLowerCase() + (answered === 1 ? "" : "s") + ", written on each";
  }

  window.PotatoTurns = { place: place, get: get, set: set, show: show, suggest: suggest };
}());
