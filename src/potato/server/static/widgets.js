// The answer types whose widgets are drawn from the item or count as they are typed (annotate.js
// reads and fills their answers through get and set, by the fieldset's data-type):
// - edit: a text rewritten in a box that starts with the original (upstream's text_edit);
// - trajedit: a box for each editable field of each step of a trace (trajectory_edit);
// - review: a card for each part of an item (tool_call_review, handoff_review, multimodal_reasoning,
//   gui_trajectory, speech_transcript);
// - ranking: the labels put in order, best first;
// - constant_sum: whole points spread over the labels, adding up to a total;
// - attribution: the agent, the decisive step and why a multi-agent trace failed;
// - scorecard: each agent of a team and the team scored on dimensions, milestones checked off;
// - behaviours: for each emergent behaviour, the turns (across agents) that take part;
// - graph: the agents on a trace's critical path, and the passages between agents that mattered;
// - grid: the roles of a table's cells (headers, empty cells) beside the table's image;
// - range: a range on a scale, its low and high ends (upstream's range_slider);
// - cards: the item's cards sorted into groups (upstream's card_sort);
// - qa: a question's answer marked in its passage (upstream's extractive_qa);
// - conjoint: one profile chosen of a set, each a level of every attribute (upstream's conjoint);
// - links: links between the spans another question marks (upstream's span_link).
// What an item offers (its originals, its parts, its agents and steps) comes with the item from the
// server, which checks every answer against the same; everything is drawn with textContent only.
(function () {
  "use strict";

  var SCHEMES = Array.prototype.slice.call(document.querySelectorAll("fieldset.scheme"));

  // A text edit counts what it changed as it is typed, as the server counts it on saving:
  // characters and words (split at whitespace) inserted, deleted or replaced, and shows the words
  // struck out and added. Levenshtein in Hyyro's bit-parallel form (BigInt masks), as potato/edits.py.
  function editDistance(a, b) {
    if (!a.length || !b.length) return a.length + b.length;
    var masks = new Map(), m = a.length, one = BigInt(1);
    a.forEach(function (x, i) { masks.set(x, (masks.get(x) || BigInt(0)) | (one << BigInt(i))); });
    var full = (one << BigInt(m)) - one, top = one << BigInt(m - 1);
    var plus = full, minus = BigInt(0), score = m, zero = BigInt(0);
    b.forEach(function (x) {
      var eq = masks.get(x) || zero, xv = eq | minus;
      var xh = (((eq & plus) + plus) ^ plus) | eq;
      var up = minus | (~(xh | plus) & full), down = plus & xh;
      if ((up & top) !== zero) score += 1; else if ((down & top) !== zero) score -= 1;
      up = ((up << one) | one) & full;
      down = (down << one) & full;
      plus = (down | ~(xv | up)) & full;
      minus = up & xv;
    });
    return score;
  }
  function wordsOf(text) { return text.split(/\s+/).filter(Boolean); }

  // The words of the original struck out and those of the edit added, in order (a longest common
  // subsequence of words); drawn as text nodes, never markup.
  function wordChanges(a, b) {
    var n = a.length, m = b.length, table = [], i, j;
    for (i = 0; i <= n; i++) { table.push(new Array(m + 1).fill(0)); }
    for (i = n - 1; i >= 0; i--) {
      for (j = m - 1; j >= 0; j--) {
        table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
      }
    }
    var out = [];
    for (i = 0, j = 0; i < n || j < m;) {
      if (i < n && j < m && a[i] === b[j]) { out.push(["same", a[i]]); i++; j++; }
      else if (i < n && (j === m || table[i + 1][j] >= table[i][j + 1])) { out.push(["del", a[i]]); i++; }
      else { out.push(["ins", b[j]]); j++; }
    }
    return out;
  }

  var EDIT_DIFF_WORDS = 2000;  // beyond this many words the struck-out view is left out (its table grows squared)
  function showEdit(fs) {
    var source = fs.querySelector(".edit-source").textContent, edited = fs.querySelector(".edit-text").value;
    var before = wordsOf(source), after = wordsOf(edited);
    var stats = fs.querySelector(".edit-stats");
    if (stats) {
      stats.querySelector(".edit-words").textContent = String(editDistance(before, after));
      stats.querySelector(".edit-chars").textContent = String(editDistance(Array.from(source), Array.from(edited)));
    }
    var changes = fs.querySelector(".edit-changes");
    if (!changes) return;
    changes.textContent = "";
    if (before.length > EDIT_DIFF_WORDS || after.length > EDIT_DIFF_WORDS) {
      changes.textContent = "(too long to show word by word)";
      return;
    }
    wordChanges(before, after).forEach(function (part) {
      var el = document.createElement(part[0] === "same" ? "span" : part[0]);
      el.textContent = part[1];
      changes.appendChild(el);
      changes.appendChild(document.createTextNode(" "));
    });
  }

  // A constant sum: whole points, each box at least the least and the boxes together at most the total
  // (a number that would pass it is lowered to what is left); the line under them says what is left.
  // Points given so far are saved as they are; the item is done once they add up to the total.
  function showPoints(fs) {
    var box = fs.querySelector(".points"), total = Number(box.dataset.total), sum = 0, any = false;
    fs.querySelectorAll(".points input").forEach(function (input) {
      if (input.dataset.given && input.value !== "") { sum += Number(input.value); any = true; }
      var out = input.parentNode.querySelector(".points-value");
      if (out) out.textContent = input.dataset.given ? input.value : "\u2013";
    });
    fs.querySelector(".points-total").textContent = !any ? "Allocated: 0 / " + total
      : "Allocated: " + sum + " / " + total + (sum === total ? " \u2713" : " \u00b7 " + (total - sum) + " left");
  }
  // The constant sums (shown) whose points given do not add up yet, by their question.
  function unallocated(a) {
    return SCHEMES.filter(function (fs) {
      if (fs.dataset.type !== "constant_sum" || fs.hidden || !a[fs.dataset.schema]) return false;
      var total = Number(fs.querySelector(".points").dataset.total), given = a[fs.dataset.schema];
      var sum = Object.keys(given).reduce(function (s, k) { return s + given[k]; }, 0);
      return sum !== total || Object.keys(given).length !== fs.querySelectorAll(".points input").length;
    }).map(function (fs) { return fs.querySelector("legend").firstChild.textContent.trim(); });
  }
  SCHEMES.filter(function (fs) { return fs.dataset.type === "constant_sum"; }).forEach(function (fs) {
    var box = fs.querySelector(".points"), total = Number(box.dataset.total), least = Number(box.dataset.least);
    fs.addEventListener("input", function (ev) {
      var input = ev.target;
      if (!input.dataset || !input.dataset.label) return;
      input.dataset.given = input.value === "" ? "" : "1";
      if (input.value !== "") {
        var others = 0;
        fs.querySelectorAll(".points input").forEach(function (x) {
          if (x !== input && x.dataset.given && x.value !== "") others += Number(x.value);
        });
        var value = Math.round(Number(input.value));
        value = Math.max(least, Math.min(value, total - others));
        if (String(value) !== input.value) input.value = String(value);
      }
      showPoints(fs);
    });
  });

  // A ranking: each label's place shown in its name for screen readers; the first move (or "Keep this
  // order") makes the order the annotator's answer, and each move is saved as it is made.
  function showRanking(fs) {
    var items = fs.querySelectorAll(".rank-item"), n = items.length;
    items.forEach(function (li, k) {
      li.setAttribute("aria-label", (k + 1) + " of " + n + ": " + li.querySelector(".rank-label").textContent);
      li.dataset.rank = String(k + 1);
    });
    fs.querySelector(".rank-state").textContent = fs.dataset.touched ? "Your ranking, best first."
      : "Not ranked yet: move a label, or keep this order.";
  }
  function ranked(fs, li, focus) {
    fs.dataset.touched = "1";
    showRanking(fs);
    if (focus) li.focus();
    fs.dispatchEvent(new Event("change"));
  }
  function moveRank(fs, li, by) {
    var list = li.parentNode, other = by < 0 ? li.previousElementSibling : li.nextElementSibling;
    if (!other) return false;
    if (by < 0) list.insertBefore(li, other); else list.insertBefore(other, li);
    return true;
  }
  SCHEMES.filter(function (fs) { return fs.dataset.type === "ranking"; }).forEach(function (fs) {
    var list = fs.querySelector(".ranking"), dragged = null;
    list.addEventListener("keydown", function (ev) {
      var li = ev.target.closest && ev.target.closest(".rank-item");
      if (!li || (ev.key !== "ArrowUp" && ev.key !== "ArrowDown") || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      ev.preventDefault();
      if (moveRank(fs, li, ev.key === "ArrowUp" ? -1 : 1)) ranked(fs, li, true);
    });
    list.addEventListener("click", function (ev) {
      var btn = ev.target.closest(".rank-move");
      if (!btn) return;
      var li = btn.closest(".rank-item");
      if (moveRank(fs, li, Number(btn.dataset.by))) ranked(fs, li, false);
    });
    list.addEventListener("dragstart", function (ev) { dragged = ev.target.closest(".rank-item"); });
    list.addEventListener("dragover", function (ev) { if (dragged) ev.preventDefault(); });
    list.addEventListener("drop", function (ev) {
      var target = ev.target.closest && ev.target.closest(".rank-item");
      ev.preventDefault();
      if (!dragged || !target || target === dragged) { dragged = null; return; }
      var after = Array.prototype.indexOf.call(list.children, dragged) < Array.prototype.indexOf.call(list.children, target);
      list.insertBefore(dragged, after ? target.nextElementSibling : target);
      ranked(fs, dragged, false);
      dragged = null;
    });
    fs.querySelector(".rank-keep").addEventListener("click", function () { ranked(fs, null, false); });
  });

  // A review of an item's parts (tool calls, handoffs, reasoning blocks, GUI steps, transcript segments):
  // a card for each, its answers restored by its number (a stored review holds only the parts given
  // one). Each card's choices are a group of their own. A GUI step's click is marked on its screenshot.
  function drawReview(fs, parts, saved) {
    var list = fs.querySelector(".review-parts"), template = fs.querySelector(".review-template"), byIndex = {};
    saved.forEach(function (e) { byIndex[e.index] = e; });
    list.textContent = "";
    parts.forEach(function (part) {
      var card = template.content.firstElementChild.cloneNode(true), entry = byIndex[part.index] || {};
      card.dataset.index = part.index;
      card.querySelector(".review-name").textContent = part.name;
      card.querySelector(".review-step").textContent = part.place;
      var detail = card.querySelector(".review-detail"), shot = card.querySelector(".review-shot");
      detail.textContent = part.detail;
      detail.hidden = !part.detail;
      shot.hidden = !part.image && !part.caption;
      card.querySelector(".review-caption").textContent = part.caption;
      var image = card.querySelector(".review-image"), marker = card.querySelector(".review-marker");
      image.hidden = !part.image;
      if (part.image) {
        image.src = part.image;
        image.alt = part.caption || part.what;
      }
      marker.hidden = !part.marker;
      if (part.marker) {  // CSSOM, which the page's policy allows (a style attribute it would not)
        marker.style.left = (part.marker[0] * 100) + "%";
        marker.style.top = (part.marker[1] * 100) + "%";
      }
      card.querySelectorAll("[data-part]").forEach(function (input) {
        var key = input.dataset.part, given = entry[key];
        input.name = fs.dataset.schema + "/" + part.index + "/" + key;
        if (input.type === "checkbox") input.checked = Array.isArray(given) && given.indexOf(input.value) >= 0;
        else if (input.type === "radio") input.checked = given !== undefined && String(given) === input.value;
        else input.value = given || "";
        input.setAttribute("aria-label", part.what + ", " + key + (input.type === "text" ? "" : ": " + input.value));
      });
      list.appendChild(card);
    });
    if (!parts.length) list.textContent = list.dataset.empty;
  }

  // A trajectory edit: a box for each editable field of each step, and the final answer, each a
  // text edit of its own (its block is what showEdit reads); a step's thought above its boxes.
  function drawTrajectory(fs, originals, saved) {
    var steps = fs.querySelector(".trajedit-steps"), template = fs.querySelector(".trajedit-template");
    var byPlace = {}, thoughts = originals.thoughts || {}, shownThought = {};
    (saved.steps || []).forEach(function (e) { byPlace[e.step_index + "/" + e.field] = e; });
    steps.textContent = "";
    function block(step, field, original, entry, name, label) {
      var el = template.content.firstElementChild.cloneNode(true);
      el.dataset.step = step;
      el.dataset.field = field;
      el.querySelector(".trajedit-name").textContent = name;
      el.querySelector(".edit-source").textContent = original;
      var box = el.querySelector(".edit-text");
      box.value = entry ? entry.edited_text : original;
      box.setAttribute("aria-label", label);
      var reason = el.querySelector(".edit-reason");
      if (reason) { reason.value = (entry && entry.reason) || ""; reason.setAttribute("aria-label", "Reason for editing " + name); }
      el.dataset.touched = entry ? "1" : "";
      steps.appendChild(el);
      showEdit(el);
    }
    (originals.steps || []).forEach(function (slot) {
      var n = slot.step + 1, field = slot.field.charAt(0).toUpperCase() + slot.field.slice(1);
      if (thoughts[slot.step] !== undefined && !shownThought[slot.step]) {
        shownThought[slot.step] = true;
        var thought = document.createElement("p");
        thought.className = "trajedit-thought muted";
        thought.textContent = "Step " + n + ", thought: " + thoughts[slot.step];
        steps.appendChild(thought);
      }
      block(String(slot.step), slot.field, slot.original, byPlace[slot.step + "/" + slot.field],
            "Step " + n + " \u00b7 " + field, "Corrected " + field + " for step " + n);
    });
    if (typeof originals.final_answer === "string") {
      block("", "", originals.final_answer, saved.final_answer, "Final answer", "Corrected final answer");
    }
    if (!steps.children.length) steps.textContent = "This item has no steps to correct.";
    sumTrajectory(fs);
  }

  function sumTrajectory(fs) {
    var count = 0, total = 0;
    fs.querySelectorAll(".trajedit-block").forEach(function (block) {
      var before = block.querySelector(".edit-source").textContent, after = block.querySelector(".edit-text").value;
      var changed = !!block.dataset.touched && before !== after;
      block.querySelector(".trajedit-flag").textContent = changed ? "\u270e edited" : "";
      block.classList.toggle("edited", changed);
      if (changed) { count += 1; total += editDistance(Array.from(before), Array.from(after)); }
    });
    fs.querySelector(".trajedit-count").textContent = String(count);
    fs.querySelector(".trajedit-total").textContent = String(total);
  }

  // Typing in a box (or its reason) touches it; Reset puts its original back, kept as the answer
  // (the original needs no change). A text edit's box is its fieldset's own.
  SCHEMES.filter(function (fs) { return fs.dataset.type === "edit" || fs.dataset.type === "trajedit"; }).forEach(function (fs) {
    fs.addEventListener("input", function (ev) {
      var block = ev.target.closest(".trajedit-block") || fs;
      block.dataset.touched = "1";
      showEdit(block);
      if (fs.dataset.type === "trajedit") sumTrajectory(fs);
    });
    fs.addEventListener("click", function (ev) {
      var reset = ev.target.closest(".edit-reset");
      if (!reset) return;
      var block = reset.closest(".trajedit-block") || fs;
      block.querySelector(".edit-text").value = block.querySelector(".edit-source").textContent;
      block.dataset.touched = "1";
      showEdit(block);
      if (fs.dataset.type === "trajedit") sumTrajectory(fs);
      fs.dispatchEvent(new Event("change"));
    });
  });

  // A failure attribution offers the item's own agents and steps (the server reads them from the
  // item: step_choices). An answer naming one the item no longer lists keeps it as a choice, so
  // showing an answer never changes it.
  function offerSteps(fs, choices, given) {
    var agents = (choices && choices.agents) || [], steps = (choices && choices.steps) || [];
    var agentsAt = fs.querySelector(".fa-agent"), stepsAt = fs.querySelector(".fa-step");
    function fill(select, entries) {
      while (select.options.length > 1) select.remove(1);
      entries.forEach(function (e) { select.add(new Option(e[1], e[0])); });
    }
    if (given.responsible_agent && agents.indexOf(given.responsible_agent) < 0) agents = agents.concat([given.responsible_agent]);
    var listed = steps.map(function (s) { return [String(s.index), s.caption]; });
    var step = given.decisive_step;
    if (typeof step === "number" && !steps.some(function (s) { return s.index === step; })) {
      listed.push([String(step), (step + 1) + ". (not in this item's steps)"]);
    }
    fill(agentsAt, agents.map(function (a) { return [a, a]; }));
    fill(stepsAt, listed);
  }


  // An agent scorecard: a card for each of the item's agents, a scale for each dimension.
  function drawScorecard(fs, team, given) {
    var list = fs.querySelector(".scorecard-agents"), template = fs.querySelector(".scorecard-template");
    var scores = given.agents || {};
    list.textContent = "";
    (team.agents || []).forEach(function (agent) {
      var card = template.content.firstElementChild.cloneNode(true);
      card.dataset.agent = agent;
      card.querySelector(".scorecard-name").textContent = agent;
      card.querySelectorAll("[data-dim]").forEach(function (row) {
        row.querySelectorAll("input").forEach(function (input) {
          input.name = fs.dataset.schema + "/" + agent + "/" + row.dataset.dim;
          input.checked = String((scores[agent] || {})[row.dataset.dim]) === input.value;
          input.setAttribute("aria-label", agent + ", " + row.dataset.dim + ": " + input.value);
        });
      });
      list.appendChild(card);
    });
    if (!(team.agents || []).length) list.textContent = "No agents in this trace.";
    fs.querySelectorAll(".scorecard-team [data-dim] input").forEach(function (input) {
      input.checked = String((given.team || {})[input.closest("[data-dim]").dataset.dim]) === input.value;
    });
    fs.querySelectorAll(".scorecard-milestones input").forEach(function (input) {
      input.checked = (given.milestones || {})[input.value] === true;
    });
  }

  function scores(rows) {
    var out = {}, any = false;
    rows.forEach(function (row) {
      var on = row.querySelector("input:checked");
      if (on) { out[row.dataset.dim] = Number(on.value); any = true; }
    });
    return any ? out : null;
  }

  // Emergent behaviours: under each, a box for each turn of the item, named by its place and agent.
  function drawBehaviours(fs, team, given) {
    fs.querySelectorAll(".behaviour").forEach(function (block) {
      var name = block.dataset.behaviour, mine = given[name] || {}, turns = block.querySelector(".behaviour-turns");
      var picked = Array.isArray(mine.turns) ? mine.turns : [];
      turns.textContent = "";
      (team.turns || []).forEach(function (turn) {
        var label = document.createElement("label"), box = document.createElement("input"), words = document.createElement("span");
        label.className = "option";
        box.type = "checkbox";
        box.value = String(turn.index);
        box.checked = picked.indexOf(turn.index) >= 0;
        box.setAttribute("aria-label", name + ", turn " + (turn.index + 1) + " (" + turn.agent + ")");
        words.textContent = (turn.index + 1) + ". " + turn.agent + ": " + turn.text;
        label.appendChild(box);
        label.appendChild(document.createTextNode(" "));
        label.appendChild(words);
        turns.appendChild(label);
      });
      if (!(team.turns || []).length) turns.textContent = "No turns in this trace.";
      var note = block.querySelector(".behaviour-note");
      if (note) note.value = mine.note || "";
    });
  }

  // An interaction graph: a box for each agent (on the critical path or not), a card for each passage
  // from one agent to another (normal, critical or problematic), and a picture of both.
  var SVG = "http://www.w3.org/2000/svg";
  function drawGraph(fs, team, given) {
    var nodes = fs.querySelector(".graph-nodes"), edges = fs.querySelector(".graph-edges");
    var template = fs.querySelector(".graph-edge-template"), critical = given.critical_nodes || [], marks = given.edges || {};
    nodes.textContent = "";
    edges.textContent = "";
    (team.agents || []).forEach(function (agent) {
      var label = document.createElement("label"), box = document.createElement("input"), name = document.createElement("span");
      label.className = "option";
      box.type = "checkbox";
      box.value = agent;
      box.checked = critical.indexOf(agent) >= 0;
      box.setAttribute("aria-label", agent + ", on the critical path");
      name.textContent = agent;
      label.appendChild(box);
      label.appendChild(document.createTextNode(" "));
      label.appendChild(name);
      nodes.appendChild(label);
    });
    if (!(team.agents || []).length) nodes.textContent = "No agents in this trace.";
    (team.edges || []).forEach(function (edge, n) {
      var card = template.content.firstElementChild.cloneNode(true), what = edge.from + " \u2192 " + edge.to;
      card.dataset.key = edge.key;
      card.querySelector(".graph-edge-name").textContent = what;
      card.querySelector(".graph-edge-count").textContent = edge.count === 1 ? "once" : edge.count + " times";
      card.querySelectorAll("input").forEach(function (input) {
        input.name = fs.dataset.schema + "/edge/" + n;
        input.checked = (marks[edge.key] || "") === input.value;
        input.setAttribute("aria-label", what + ": " + (input.value || "normal"));
      });
      edges.appendChild(card);
    });
    drawPicture(fs, team);
  }

  // The picture: the agents on a circle, a line for each passage; marks shown by the lines' width and
  // dashes and the circles' fill as well as their colour, so they never rest on colour alone.
  function drawPicture(fs, team) {
    var svg = fs.querySelector(".graph-picture"), agents = team.agents || [], at = {}, critical = {}, marks = {};
    svg.textContent = "";
    svg.classList.toggle("empty", !agents.length);
    fs.querySelectorAll(".graph-nodes input:checked").forEach(function (i) { critical[i.value] = true; });
    fs.querySelectorAll(".graph-edge").forEach(function (card) {
      var on = card.querySelector("input:checked");
      marks[card.dataset.key] = on ? on.value : "";
    });
    agents.forEach(function (agent, n) {
      var angle = 2 * Math.PI * n / agents.length - Math.PI / 2, r = agents.length > 1 ? 1 : 0;
      at[agent] = [160 + 110 * Math.cos(angle) * r, 105 + 75 * Math.sin(angle) * r];
    });
    (team.edges || []).forEach(function (edge) {
      var a = at[edge.from], b = at[edge.to], line = document.createElementNS(SVG, "line");
      if (!a || !b) return;
      line.setAttribute("x1", a[0]);
      line.setAttribute("y1", a[1]);
      line.setAttribute("x2", a[0] + (b[0] - a[0]) * 0.85);
      line.setAttribute("y2", a[1] + (b[1] - a[1]) * 0.85);
      line.setAttribute("class", "graph-line " + (marks[edge.key] || "normal"));
      svg.appendChild(line);
    });
    agents.forEach(function (agent) {
      var dot = document.createElementNS(SVG, "circle"), name = document.createElementNS(SVG, "text");
      dot.setAttribute("cx", at[agent][0]);
      dot.setAttribute("cy", at[agent][1]);
      dot.setAttribute("r", 9);
      dot.setAttribute("class", "graph-node" + (critical[agent] ? " critical" : ""));
      name.setAttribute("x", at[agent][0]);
      name.setAttribute("y", at[agent][1] + 24);
      name.setAttribute("class", "graph-name");
      name.textContent = agent.length > 24 ? agent.slice(0, 23) + "\u2026" : agent;
      svg.appendChild(dot);
      svg.appendChild(name);
    });
  }

  document.addEventListener("change", function (e) {  // the picture follows the answer
    var fs = e.target.closest && e.target.closest("fieldset[data-type=graph]");
    if (fs && fs.graphTeam) drawPicture(fs, fs.graphTeam);
  });

  // A table grid: the table's image above a grid of its cells, each cell's role moved on by Enter,
  // Space or a click, the arrow keys moving between cells (they are not the page's here).
  var ROLE_MARKS = { data: "", col_header: "CH", row_header: "RH", empty: "\u2205", header: "H", merged: "M" };
  function roleMark(role) { return ROLE_MARKS.hasOwnProperty(role) ? ROLE_MARKS[role] : role.slice(0, 2).toUpperCase(); }
  function gridRoles(fs) { return JSON.parse(fs.querySelector(".grid-cells").dataset.roles); }

  function drawCells(fs) {
    var grid = fs.querySelector(".grid-cells"), roles = gridRoles(fs), cells = fs.gridCells || {};
    var rows = Number(fs.querySelector(".grid-rows").value), cols = Number(fs.querySelector(".grid-cols").value);
    grid.textContent = "";
    grid.style.gridTemplateColumns = "repeat(" + cols + ", minmax(2rem, 1fr))";
    for (var r = 0; r < rows; r++) {
      for (var c = 0; c < cols; c++) {
        var role = cells[r + "," + c] || roles[0], cell = document.createElement("button");
        cell.type = "button";
        cell.className = "grid-cell role-" + role;
        cell.dataset.r = String(r);
        cell.dataset.c = String(c);
        cell.textContent = roleMark(role);
        cell.setAttribute("aria-label", "row " + (r + 1) + " column " + (c + 1) + ", " + role.replace(/_/g, " "));
        cell.tabIndex = r === 0 && c === 0 ? 0 : -1;
        grid.appendChild(cell);
      }
    }
  }

  function setGrid(fs, value, item) {
    var table = (item.grids || {})[fs.dataset.schema] || {}, given = value && typeof value === "object" ? value : null;
    var image = fs.querySelector(".grid-image");
    image.hidden = !table.image;
    if (table.image) { image.src = table.image; }
    fs.querySelector(".grid-problem").textContent = table.problem ? "The table's image is not shown: " + table.problem : "";
    fs.querySelector(".grid-rows").value = String(given ? given.rows : table.rows || 3);
    fs.querySelector(".grid-cols").value = String(given ? given.cols : table.cols || 3);
    fs.gridCells = given && given.cells ? JSON.parse(JSON.stringify(given.cells)) : {};
    fs.dataset.touched = given ? "1" : "";
    var legend = fs.querySelector(".grid-legend");
    legend.textContent = gridRoles(fs).map(function (role) {
      return (roleMark(role) || "blank") + " = " + role.replace(/_/g, " ");
    }).join(", ");
    drawCells(fs);
  }

  function changed(fs) {
    fs.dataset.touched = "1";
    fs.querySelector(".grid-cells").dispatchEvent(new Event("change", { bubbles: true }));
  }

  document.querySelectorAll("fieldset[data-type=grid]").forEach(function (fs) {
    var grid = fs.querySelector(".grid-cells");
    fs.querySelectorAll(".grid-rows, .grid-cols").forEach(function (input) {
      input.addEventListener("change", function () {
        var n = Math.max(1, Math.min(40, Math.round(Number(input.value)) || 1)), keep = {};
        input.value = String(n);
        var rows = Number(fs.querySelector(".grid-rows").value), cols = Number(fs.querySelector(".grid-cols").value);
        Object.keys(fs.gridCells || {}).forEach(function (k) {
          var p = k.split(",");
          if (Number(p[0]) < rows && Number(p[1]) < cols) { keep[k] = fs.gridCells[k]; }
        });
        fs.gridCells = keep;
        drawCells(fs);
        fs.dataset.touched = "1";
      });
    });
    grid.addEventListener("click", function (e) {
      var cell = e.target.closest(".grid-cell");
      if (!cell) { return; }
      var roles = gridRoles(fs), key = cell.dataset.r + "," + cell.dataset.c;
      var next = roles[(roles.indexOf(fs.gridCells[key] || roles[0]) + 1) % roles.length];
      if (next === roles[0]) { delete fs.gridCells[key]; } else { fs.gridCells[key] = next; }
      cell.className = "grid-cell role-" + next;
      cell.textContent = roleMark(next);
      cell.setAttribute("aria-label", "row " + (Number(cell.dataset.r) + 1) + " column " + (Number(cell.dataset.c) + 1) + ", " +
                        next.replace(/_/g, " "));
      changed(fs);
    });
    grid.addEventListener("keydown", function (e) {
      var cell = e.target.closest(".grid-cell"), moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
      if (!cell || !moves[e.key] || e.ctrlKey || e.metaKey || e.altKey) { return; }
      e.preventDefault();
      e.stopPropagation();
      var to = grid.querySelector(".grid-cell[data-r='" + (Number(cell.dataset.r) + moves[e.key][0]) + "'][data-c='" +
                                  (Number(cell.dataset.c) + moves[e.key][1]) + "']");
      if (to) {
        cell.tabIndex = -1;
        to.tabIndex = 0;
        to.focus();
      }
    });
  });

  // A range slider: two thumbs (two range inputs, each with the keyboard of its own), the low one
  // never above the high one; nothing is answered until one is moved.
  function showRange(fs) {
    var low = fs.querySelector(".range-low"), high = fs.querySelector(".range-high");
    var out = fs.querySelector(".range-value");
    if (out) { out.textContent = fs.dataset.touched ? low.value + " \u2013 " + high.value : "not set"; }
  }

  document.querySelectorAll("fieldset[data-type=range]").forEach(function (fs) {
    fs.querySelectorAll(".range-low, .range-high").forEach(function (input) {
      input.addEventListener("input", function () {
        var low = fs.querySelector(".range-low"), high = fs.querySelector(".range-high");
        if (Number(low.value) > Number(high.value)) {  // a thumb pushed past the other takes it along
          if (input === low) { high.value = low.value; } else { low.value = high.value; }
        }
        fs.dataset.touched = "1";
        showRange(fs);
      });
    });
  });

  // A card sort: each of the item's cards with the group it goes in (a list of the groups, or a box
  // for each where a card may go in several), and how many cards each group has.
  function drawCards(fs, cards, given) {
    var list = fs.querySelector(".cards"), template = fs.querySelector(".card-template");
    list.textContent = "";
    cards.forEach(function (text, n) {
      var card = template.content.firstElementChild.cloneNode(true);
      card.dataset.card = text;
      card.querySelector(".card-text").textContent = text;
      card.querySelectorAll("select, input").forEach(function (input) {
        if (input.tagName === "SELECT") {
          input.value = "";
          Object.keys(given).forEach(function (group) { if (given[group].indexOf(text) >= 0) { input.value = group; } });
          input.setAttribute("aria-label", "Card " + (n + 1) + ": group");
        } else {
          input.checked = (given[input.value] || []).indexOf(text) >= 0;
          input.setAttribute("aria-label", "Card " + (n + 1) + ", in " + input.value);
        }
      });
      list.appendChild(card);
    });
    if (!cards.length) { list.textContent = "No cards in this item."; }
    showCards(fs);
  }

  function sortedCards(fs) {
    var out = {}, any = false;
    fs.querySelectorAll(".card").forEach(function (card) {
      card.querySelectorAll("select, input:checked").forEach(function (input) {
        if (!input.value) { return; }
        (out[input.value] = out[input.value] || []).push(card.dataset.card);
        any = true;
      });
    });
    return any ? out : null;
  }

  function showCards(fs) {
    var sorted = sortedCards(fs) || {};
    fs.querySelector(".card-summary").textContent = Array.prototype.map.call(fs.querySelectorAll(".card-groups li"), function (li) {
      var n = (sorted[li.dataset.group] || []).length;
      return li.textContent.trim() + ": " + n;
    }).join(" \u00b7 ");
  }

  document.addEventListener("change", function (e) {
    var fs = e.target.closest && e.target.closest("fieldset[data-type=cards]");
    if (fs) { showCards(fs); }
  });

  // An extractive question: its passage, the answer marked in it by selecting the words and choosing
  // "Use the selection", or by typing them and choosing "Find" (again: the next place they occur);
  // "No answer in the passage" where allowed. Offsets count code points, as the server's do.
  function points(text, units) { return Array.from(text.slice(0, units)).length; }
  function units(text, count) { return Array.from(text).slice(0, count).join("").length; }

  function showAnswer(fs) {
    var passage = fs.querySelector(".qa-passage"), text = fs.qaPassage || "", a = fs.qaAnswer;
    passage.textContent = "";
    if (a && !a.unanswerable) {
      var from = units(text, a.start), to = units(text, a.end), mark = document.createElement("mark");
      mark.textContent = text.slice(from, to);
      passage.appendChild(document.createTextNode(text.slice(0, from)));
      passage.appendChild(mark);
      passage.appendChild(document.createTextNode(text.slice(to)));
    } else {
      passage.textContent = text;
    }
    fs.querySelector(".qa-state").textContent = !a ? "No answer marked yet." : a.unanswerable ? "Marked: no answer in the passage." :
      "Answer: \u201c" + a.answer_text + "\u201d (characters " + a.start + " to " + a.end + ")";
    var none = fs.querySelector(".qa-none");
    if (none) { none.setAttribute("aria-pressed", String(!!(a && a.unanswerable))); }
  }

  function answerAt(fs, from, to) {  // UTF-16 offsets into the passage
    var text = fs.qaPassage || "";
    if (to <= from) { return false; }
    fs.qaAnswer = { answer_text: text.slice(from, to), start: points(text, from), end: points(text, to), unanswerable: false };
    showAnswer(fs);
    fs.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }

  document.querySelectorAll("fieldset[data-type=qa]").forEach(function (fs) {
    fs.querySelector(".qa-use").addEventListener("click", function () {
      var sel = window.getSelection(), passage = fs.querySelector(".qa-passage");
      if (!sel.rangeCount || !passage.contains(sel.anchorNode) || !passage.contains(sel.focusNode)) {
        fs.querySelector(".qa-state").textContent = "Select the answer's words in the passage first.";
        return;
      }
      var range = sel.getRangeAt(0), before = document.createRange();
      before.setStart(passage, 0);
      before.setEnd(range.startContainer, range.startOffset);
      var from = before.toString().length;
      answerAt(fs, from, from + range.toString().length);
    });
    fs.querySelector(".qa-find").addEventListener("click", function () {
      var words = fs.querySelector(".qa-typed").value, text = fs.qaPassage || "";
      if (!words) { return; }
      var after = fs.qaAnswer && !fs.qaAnswer.unanswerable && fs.qaAnswer.answer_text === words ? units(text, fs.qaAnswer.start) + 1 : 0;
      var at = text.indexOf(words, after);
      if (at < 0) { at = text.indexOf(words); }
      if (at < 0 || !answerAt(fs, at, at + words.length)) {
        fs.querySelector(".qa-state").textContent = "\u201c" + words + "\u201d is not in the passage.";
      }
    });
    fs.querySelector(".qa-typed").addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); e.stopPropagation(); fs.querySelector(".qa-find").click(); }
    });
    fs.querySelector(".qa-clear").addEventListener("click", function () {
      fs.qaAnswer = null;
      showAnswer(fs);
      fs.dispatchEvent(new Event("change", { bubbles: true }));
    });
    var none = fs.querySelector(".qa-none");
    if (none) {
      none.addEventListener("click", function () {
        fs.qaAnswer = { answer_text: "", start: -1, end: -1, unanswerable: true };
        showAnswer(fs);
        fs.dispatchEvent(new Event("change", { bubbles: true }));
      });
    }
  });

  // A conjoint choice set: a card for each profile (its level of each attribute), one chosen, or none.
  function drawProfiles(fs, profiles, given) {
    var list = fs.querySelector(".profiles"), template = fs.querySelector(".profile-template");
    var chosen = given ? given.chosen_profile : null;
    list.textContent = "";
    profiles.forEach(function (profile, n) {
      var card = template.content.firstElementChild.cloneNode(true), rows = card.querySelector("tbody");
      card.querySelector(".profile-name").textContent = "Option " + (n + 1);
      Object.keys(profile).forEach(function (attribute) {
        var tr = document.createElement("tr"), th = document.createElement("th"), td = document.createElement("td");
        th.scope = "row";
        th.textContent = attribute;
        td.textContent = profile[attribute];
        tr.appendChild(th);
        tr.appendChild(td);
        rows.appendChild(tr);
      });
      var pick = card.querySelector("input");
      pick.value = String(n + 1);
      pick.checked = chosen === n + 1;
      pick.setAttribute("aria-label", "Choose option " + (n + 1));
      list.appendChild(card);
    });
    var none = fs.querySelector(".profile-none input");
    if (none) { none.checked = chosen === "none"; }
    if (!profiles.length) { list.textContent = "No profiles in this item."; }
  }

  // Links between the spans another question marks (upstream's span_link): the spans marked now,
  // picked in order (the source first), joined by a link of a chosen type; a link goes when a span it
  // joins is removed. The spans come from annotate.js each time they change (potato:spans).
  function linkKey(s) { return [s.start, s.end, s.label, s.field || ""].join("|"); }
  function linkSpan(s) { var out = { start: s.start, end: s.end, label: s.label }; if (s.field) { out.field = s.field; } return out; }
  function spanWords(s) { return s.label + ": \u201c" + (s.text !== undefined ? s.text : s.start + "\u2013" + s.end) + "\u201d"; }

  function drawLinkSpans(fs) {
    var box = fs.querySelector(".link-spans"), spans = fs.linkSpans || [];
    fs.linkPicked = (fs.linkPicked || []).filter(function (k) { return spans.some(function (s) { return linkKey(s) === k; }); });
    box.textContent = "";
    spans.forEach(function (s) {
      var label = document.createElement("label"), pick = document.createElement("input"), words = document.createElement("span");
      label.className = "option";
      pick.type = "checkbox";
      pick.value = linkKey(s);
      pick.checked = fs.linkPicked.indexOf(pick.value) >= 0;
      pick.setAttribute("aria-label", "Link " + spanWords(s));
      words.textContent = spanWords(s);
      label.appendChild(pick);
      label.appendChild(document.createTextNode(" "));
      label.appendChild(words);
      box.appendChild(label);
    });
    if (!spans.length) { box.textContent = "No spans marked yet: mark them first, then link them here."; }
  }

  function drawLinks(fs) {
    var list = fs.querySelector(".link-list");
    list.textContent = "";
    (fs.links || []).forEach(function (link, n) {
      var li = document.createElement("li"), what = document.createElement("span"), remove = document.createElement("button");
      var arrow = link.direction === "undirected" ? " \u2014 " : " \u2192 ";
      what.textContent = link.link_type + ": " + link.spans.map(spanWords).join(arrow);
      remove.type = "button";
      remove.className = "ghost link-remove";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove link " + (n + 1) + " (" + what.textContent + ")");
      remove.addEventListener("click", function () {
        fs.links.splice(n, 1);
        drawLinks(fs);
        fs.dispatchEvent(new Event("change", { bubbles: true }));
      });
      li.appendChild(what);
      li.appendChild(document.createTextNode(" "));
      li.appendChild(remove);
      list.appendChild(li);
    });
  }

  function linkedWith(fs, spans) {  // the links whose spans are all still marked
    var marked = spans.map(linkKey);
    return (fs.links || []).filter(function (link) {
      return link.spans.every(function (s) { return marked.indexOf(linkKey(s)) >= 0; });
    });
  }

  document.addEventListener("potato:spans", function (e) {
    document.querySelectorAll("fieldset[data-type=links]").forEach(function (fs) {
      if (fs.querySelector(".links").dataset.spans !== e.detail.schema) { return; }
      fs.linkSpans = e.detail.spans;
      drawLinkSpans(fs);
      var kept = linkedWith(fs, e.detail.spans);
      if (fs.links && kept.length !== fs.links.length) {
        fs.links = kept;
        drawLinks(fs);
        fs.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
  });

  document.querySelectorAll("fieldset[data-type=links]").forEach(function (fs) {
    var types = JSON.parse(fs.querySelector(".links").dataset.types), state = fs.querySelector(".link-state");
    fs.querySelector(".link-spans").addEventListener("change", function (e) {
      e.stopPropagation();  // picking spans is not yet an answer
      var key = e.target.value;
      fs.linkPicked = (fs.linkPicked || []).filter(function (k) { return k !== key; });
      if (e.target.checked) { fs.linkPicked.push(key); }
    });
    fs.querySelector(".link-type").addEventListener("change", function (e) { e.stopPropagation(); });
    fs.querySelector(".link-add").addEventListener("click", function () {
      var kind = types.filter(function (t) { return t.name === fs.querySelector(".link-type").value; })[0];
      var spans = (fs.linkPicked || []).map(function (k) {
        return (fs.linkSpans || []).filter(function (s) { return linkKey(s) === k; })[0];
      });
      if (spans.length < 2) { state.textContent = "Pick at least two spans to link, the source first."; return; }
      var first = spans[0].label, last = spans[spans.length - 1].label;
      if (kind.sources.length && kind.sources.indexOf(first) < 0) {
        state.textContent = "A " + kind.name + " link starts at " + kind.sources.join(" or ") + ", not " + first + ".";
        return;
      }
      if (kind.targets.length && kind.targets.indexOf(last) < 0) {
        state.textContent = "A " + kind.name + " link ends at " + kind.targets.join(" or ") + ", not " + last + ".";
        return;
      }
      fs.links = (fs.links || []).concat([{ link_type: kind.name, spans: spans.map(function (s) { return Object.assign(linkSpan(s), { text: s.text }); }),
                                           direction: kind.directed ? "directed" : "undirected" }]);
      fs.linkPicked = [];
      drawLinkSpans(fs);
      drawLinks(fs);
      state.textContent = "Linked: " + kind.name + ".";
      fs.dispatchEvent(new Event("change", { bubbles: true }));
    });
  });

  var SETTERS = {
    edit: function (fs, value, item) {  // {edited_text, ...}: the box starts with the original until edited
      var source = ((item.edit_sources || {})[fs.dataset.schema] || {}).text || "";
      fs.querySelector(".edit-source").textContent = source;
      fs.querySelector(".edit-text").value = value && typeof value.edited_text === "string" ? value.edited_text : source;
      fs.dataset.touched = value ? "1" : "";
      showEdit(fs);
    },
    constant_sum: function (fs, value) {  // {label: points}; a box left empty has none yet
      var given = value && typeof value === "object" ? value : {};
      fs.querySelectorAll(".points input").forEach(function (input) {
        var has = typeof given[input.dataset.label] === "number";
        input.value = has ? String(given[input.dataset.label]) : (input.type === "range" ? input.min : "");
        input.dataset.given = has ? "1" : "";
      });
      showPoints(fs);
    },
    ranking: function (fs, value) {  // every label once, best first; untouched, the page's order is no answer
      var list = fs.querySelector(".ranking"), items = Array.prototype.slice.call(list.children);
      if (!fs.dataset.order) fs.dataset.order = JSON.stringify(items.map(function (li) { return li.dataset.label; }));
      (Array.isArray(value) ? value : JSON.parse(fs.dataset.order)).forEach(function (label) {
        var li = items.filter(function (x) { return x.dataset.label === label; })[0];
        if (li) list.appendChild(li);
      });
      fs.dataset.touched = Array.isArray(value) ? "1" : "";
      showRanking(fs);
    },
    review: function (fs, value, item) {  // [{index, verdict, notes}], [{index, flags, quality}], or {keyed: {n: label}, rating}
      var keyed = fs.querySelector(".review-parts").dataset.keyed, saved = Array.isArray(value) ? value : [];
      if (keyed) {
        var labels = (value && value[keyed]) || {};
        saved = Object.keys(labels).map(function (n) { return { index: Number(n), verdict: labels[n] }; });
        fs.querySelectorAll(".review-rating input").forEach(function (input) {
          input.checked = !!value && String(value.rating) === input.value;
        });
      }
      drawReview(fs, (item.review_parts || {})[fs.dataset.schema] || [], saved);
    },
    trajedit: function (fs, value, item) {  // {steps: [{step_index, field, edited_text, reason}], final_answer}
      drawTrajectory(fs, (item.edit_sources || {})[fs.dataset.schema] || {}, value && typeof value === "object" ? value : {});
    },
    scorecard: function (fs, value, item) {  // {agents: {agent: {dimension: score}}, team: {...}, milestones: {...}}
      drawScorecard(fs, (item.teams || {})[fs.dataset.schema] || {}, value && typeof value === "object" ? value : {});
    },
    behaviours: function (fs, value, item) {  // {behaviour: {turns: [place, ...], note}}
      drawBehaviours(fs, (item.teams || {})[fs.dataset.schema] || {}, value && typeof value === "object" ? value : {});
    },
    graph: function (fs, value, item) {  // {critical_nodes: [agent, ...], edges: {"A->B": mark}}
      fs.graphTeam = (item.teams || {})[fs.dataset.schema] || {};
      drawGraph(fs, fs.graphTeam, value && typeof value === "object" ? value : {});
    },
    grid: function (fs, value, item) { setGrid(fs, value, item); },  // {rows, cols, cells: {"r,c": role}}
    range: function (fs, value) {  // {range_low, range_high}; untouched, the thumbs where they start
      var low = fs.querySelector(".range-low"), high = fs.querySelector(".range-high");
      var given = value && typeof value === "object" && typeof value.range_low === "number";
      low.value = String(given ? value.range_low : low.dataset.start);
      high.value = String(given ? value.range_high : high.dataset.start);
      fs.dataset.touched = given ? "1" : "";
      showRange(fs);
    },
    cards: function (fs, value, item) {  // {group: [card, ...]}
      drawCards(fs, (item.cards || {})[fs.dataset.schema] || [], value && typeof value === "object" ? value : {});
    },
    qa: function (fs, value, item) {  // {answer_text, start, end, unanswerable}
      var shown = (item.passages || {})[fs.dataset.schema] || {};
      fs.querySelector(".qa-question").textContent = shown.question || "";
      fs.querySelector(".qa-question").hidden = !shown.question;
      fs.qaPassage = shown.passage || "";
      fs.qaAnswer = value && typeof value === "object" ? value : null;
      fs.querySelector(".qa-typed").value = "";
      showAnswer(fs);
    },
    conjoint: function (fs, value, item) {  // {chosen_profile: n or "none", profiles: [...]}
      drawProfiles(fs, (item.profiles || {})[fs.dataset.schema] || [], value && typeof value === "object" ? value : null);
    },
    links: function (fs, value) {  // [{link_type, spans: [{start, end, label, field}], direction}]
      fs.links = Array.isArray(value) ? JSON.parse(JSON.stringify(value)) : [];
      fs.linkPicked = [];
      fs.querySelector(".link-state").textContent = "";
      drawLinkSpans(fs);
      drawLinks(fs);
    },
    attribution: function (fs, value, item) {  // {responsible_agent, decisive_step, reason}
      var given = value && typeof value === "object" ? value : {};
      offerSteps(fs, (item.step_choices || {})[fs.dataset.schema], given);
      fs.querySelector(".fa-agent").value = given.responsible_agent || "";
      fs.querySelector(".fa-step").value = typeof given.decisive_step === "number" ? String(given.decisive_step) : "";
      fs.querySelector("[data-part=reason]").value = given.reason || "";
    }
  };

  var GETTERS = {
    edit: function (fs) {  // untouched, the original in the box is no one's answer
      return fs.dataset.touched ? { edited_text: fs.querySelector(".edit-text").value } : null;
    },
    constant_sum: function (fs) {
      var points = {}, any = false;
      fs.querySelectorAll(".points input").forEach(function (input) {
        if (input.dataset.given && input.value !== "") { points[input.dataset.label] = Number(input.value); any = true; }
      });
      return any ? points : null;
    },
    ranking: function (fs) {
      if (!fs.dataset.touched) return null;
      return Array.prototype.map.call(fs.querySelectorAll(".rank-item"), function (li) { return li.dataset.label; });
    },
    review: function (fs) {  // the parts given an answer, by their number; null for none
      var reviews = [];
      fs.querySelectorAll(".review-part").forEach(function (card) {
        var entry = { index: Number(card.dataset.index) }, any = false;
        card.querySelectorAll("[data-part]").forEach(function (input) {
          var part = input.dataset.part;
          if (input.type === "checkbox") {
            entry[part] = entry[part] || [];
            if (input.checked) { entry[part].push(input.value); any = true; }
          } else if (input.type === "radio") {
            if (input.checked) { entry[part] = part === "quality" ? Number(input.value) : input.value; any = true; }
          } else if (input.value) {
            entry[part] = input.value; any = true;
          }
        });
        if (any) reviews.push(entry);
      });
      var keyed = fs.querySelector(".review-parts").dataset.keyed;
      if (keyed) {  // upstream's {keyed: {part's number: label}}, with an overall rating where asked
        var out = {}, labels = {}, rating = fs.querySelector(".review-rating input:checked");
        reviews.forEach(function (e) { if (e.verdict) labels[String(e.index)] = e.verdict; });
        if (Object.keys(labels).length) out[keyed] = labels;
        if (rating) out.rating = Number(rating.value);
        return Object.keys(out).length ? out : null;
      }
      return reviews.length ? reviews : null;
    },
    trajedit: function (fs) {  // the boxes edited (an untouched one is not sent), null for none
      var edits = { steps: [], final_answer: null }, any = false;
      fs.querySelectorAll(".trajedit-block").forEach(function (block) {
        if (!block.dataset.touched) return;
        any = true;
        var text = block.querySelector(".edit-text").value;
        if (block.dataset.field === "") { edits.final_answer = { edited_text: text }; return; }
        var reason = block.querySelector(".edit-reason");
        edits.steps.push({ step_index: Number(block.dataset.step), field: block.dataset.field, edited_text: text,
                           reason: reason ? reason.value : "" });
      });
      return any ? edits : null;
    },
    scorecard: function (fs) {  // only what was scored or reached; null for nothing
      var out = { agents: {}, team: scores(Array.prototype.slice.call(fs.querySelectorAll(".scorecard-team [data-dim]"))) || {},
                  milestones: {} };
      fs.querySelectorAll(".scorecard-agent").forEach(function (card) {
        var mine = scores(Array.prototype.slice.call(card.querySelectorAll("[data-dim]")));
        if (mine) out.agents[card.dataset.agent] = mine;
      });
      fs.querySelectorAll(".scorecard-milestones input:checked").forEach(function (input) { out.milestones[input.value] = true; });
      return Object.keys(out.agents).length || Object.keys(out.team).length || Object.keys(out.milestones).length ? out : null;
    },
    behaviours: function (fs) {  // the behaviours given turns or a note; null for none
      var out = {}, any = false;
      fs.querySelectorAll(".behaviour").forEach(function (block) {
        var turns = Array.prototype.map.call(block.querySelectorAll(".behaviour-turns input:checked"), function (i) { return Number(i.value); });
        var note = block.querySelector(".behaviour-note"), words = note ? note.value : "";
        if (turns.length || words) {
          out[block.dataset.behaviour] = words ? { turns: turns, note: words } : { turns: turns };
          any = true;
        }
      });
      return any ? out : null;
    },
    graph: function (fs) {  // what is marked; null for nothing
      var critical = Array.prototype.map.call(fs.querySelectorAll(".graph-nodes input:checked"), function (i) { return i.value; });
      var edges = {};
      fs.querySelectorAll(".graph-edge").forEach(function (card) {
        var on = card.querySelector("input:checked");
        if (on && on.value) edges[card.dataset.key] = on.value;
      });
      return critical.length || Object.keys(edges).length ? { critical_nodes: critical, edges: edges } : null;
    },
    grid: function (fs) {  // the size and the cells not in the first role; null until something is changed
      if (!fs.dataset.touched) { return null; }
      var out = { rows: Number(fs.querySelector(".grid-rows").value), cols: Number(fs.querySelector(".grid-cols").value) };
      if (Object.keys(fs.gridCells || {}).length) { out.cells = JSON.parse(JSON.stringify(fs.gridCells)); }
      return out;
    },
    range: function (fs) {
      if (!fs.dataset.touched) { return null; }
      return { range_low: Number(fs.querySelector(".range-low").value), range_high: Number(fs.querySelector(".range-high").value) };
    },
    cards: function (fs) { return sortedCards(fs); },  // the cards sorted so far, by group; null for none
    qa: function (fs) { return fs.qaAnswer || null; },
    conjoint: function (fs) {  // the profiles are written by the server from the item
      var on = fs.querySelector("input[type=radio]:checked");
      if (!on) { return null; }
      return { chosen_profile: on.value === "none" ? "none" : Number(on.value) };
    },
    links: function (fs) {
      var links = (fs.links || []).map(function (link) { return { link_type: link.link_type, spans: link.spans.map(linkSpan) }; });
      return links.length ? links : null;
    },
    attribution: function (fs) {
      var agent = fs.querySelector(".fa-agent").value, step = fs.querySelector(".fa-step").value;
      var reason = fs.querySelector("[data-part=reason]").value;
      if (!agent && step === "" && !reason) return null;
      return { responsible_agent: agent, decisive_step: step === "" ? null : Number(step), reason: reason };
    }
  };

  window.PotatoWidgets = {
    handles: function (type) { return Object.prototype.hasOwnProperty.call(SETTERS, type); },
    set: function (fs, type, value, item) { SETTERS[type](fs, value, item); },
    get: function (fs, type) { return GETTERS[type](fs); },
    unallocated: unallocated
  };
})();
