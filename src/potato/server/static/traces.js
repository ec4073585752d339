// Agent traces as item fields (potato/display/traces.py reads them from the item): an agent's steps
// one under another, an evaluation's three panes (reasoning, calls, answer), a coding agent's turns
// with its tool calls shown for what they did. Built with createElement and textContent only: an
// agent's output is never read as HTML. Each step is a stop for the keyboard: Tab reaches the
// trace, the up and down arrows (and Home, End) move from step to step.
(function () {
  "use strict";

  var el = window.PotatoFields.el;  // fields.js: createElement with a class and text, never HTML

  // Arrow keys walk the steps of the trace that has the focus; the page's own keys stay as they are.
  function walkable(box) {
    box.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
      var steps = Array.prototype.slice.call(box.querySelectorAll(".trace-step:not([hidden])"));
      var at = steps.indexOf(document.activeElement), to = -1;
      if (at < 0) { return; }
      if (ev.key === "ArrowDown") { to = Math.min(at + 1, steps.length - 1); }
      else if (ev.key === "ArrowUp") { to = Math.max(at - 1, 0); }
      else if (ev.key === "Home") { to = 0; }
      else if (ev.key === "End") { to = steps.length - 1; }
      else { return; }
      ev.preventDefault();
      ev.stopPropagation();
      steps[to].focus();
    });
    return box;
  }

  function step(tag, cls, label) {
    var s = el(tag, "trace-step " + (cls || ""));
    s.tabIndex = 0;
    if (label) { s.setAttribute("aria-label", label); }
    return s;
  }

  // Text over `limit` lines folds away behind a summary that says how much there is.
  function output(text, limit, cls, what) {
    var lines = text.split("\n");
    var pre = el("pre", cls || "trace-output", text);
    if (!limit || lines.length <= limit) { return pre; }
    var more = el("details", "trace-fold"), summary = el("summary", null, (what || "Output") + " (" + lines.length + " lines)");
    more.appendChild(summary);
    more.appendChild(pre);
    return more;
  }

  var KIND_NAMES = { thought: "Thought", action: "Action", observation: "Observation", system: "System", error: "Error" };

  function agentTrace(f) {
    var box = el("div", "trace agent-trace");
    if (f.summary) {
      var n = function (count, what) { return count + " " + what + (count === 1 ? "" : "s"); };
      box.appendChild(el("p", "trace-summary muted", n(f.summary.steps, "step") + ": " + n(f.summary.thought, "thought") +
        ", " + n(f.summary.action, "action") + ", " + n(f.summary.observation, "observation")));
    }
    var list = el("ol", "trace-steps");
    f.steps.forEach(function (s, i) {
      var item = step("li", "step-" + s.kind, "Step " + (i + 1) + " of " + f.steps.length);
      item.dataset.stepIndex = String(i);
      var head = el("div", "step-head");
      if (s.number) { head.appendChild(el("span", "step-number", "#" + s.number)); }
      head.appendChild(el("span", "step-kind", s.speaker || KIND_NAMES[s.kind] || s.kind));
      if (s.tool) { head.appendChild(el("code", "step-tool", s.tool)); }
      if (s.timestamp) { head.appendChild(el("span", "step-time muted", s.timestamp)); }
      item.appendChild(head);
      if (f.collapse && s.kind === "observation") {
        var fold = el("details", "trace-fold");
        fold.appendChild(el("summary", null, "Observation (click to expand)"));
        fold.appendChild(el("div", "step-text", s.text));
        item.appendChild(fold);
      } else {
        item.appendChild(el("div", "step-text", s.text));
      }
      if (s.screenshot) {
        if (s.screenshot.src) {
          var img = el("img", "step-screenshot");
          img.src = s.screenshot.src;
          img.alt = "Screenshot: " + s.screenshot.name;
          img.loading = "lazy";
          item.appendChild(img);
        } else {
          item.appendChild(el("p", "muted", "Screenshot not shown: " + s.screenshot.name));
        }
      }
      list.appendChild(item);
    });
    if (f.run_tree && f.run_tree.length) { box.appendChild(runTree(f.run_tree, list)); }
    box.appendChild(list);
    return walkable(box);
  }

  // The tree of sub-agent runs beside a trace: choosing a run shows only the steps it and the runs
  // under it took (upstream's show_run_tree); "All steps" shows them all again.
  function runTree(nodes, list) {
    var nav = el("nav", "run-tree"), tree = el("ul", "run-tree-nodes"), said = el("p", "run-tree-state muted");
    nav.setAttribute("aria-label", "Sub-agent runs");
    said.setAttribute("aria-live", "polite");
    var buttons = [];
    function choose(button, node) {
      var keep = node ? node.steps : null, shown = 0;
      Array.prototype.forEach.call(list.children, function (item, i) {
        item.hidden = keep !== null && keep.indexOf(i) < 0;
        if (!item.hidden) { shown += 1; }
      });
      buttons.forEach(function (b) { b.setAttribute("aria-pressed", String(b === button)); });
      said.textContent = node ? "Showing the " + node.name + " run: " + shown + " of " + list.children.length + " steps" : "";
    }
    function add(node) {
      var li = el("li", "run-node depth-" + Math.min(node.depth, 6)), button = el("button", "ghost run-button");
      button.type = "button";
      button.appendChild(el("span", "run-name", node.name));
      if (node.type) { button.appendChild(el("span", "run-type muted", node.type)); }
      if (node.status) { button.appendChild(el("span", "run-status " + (node.status === "error" ? "failed" : "ok"), node.status)); }
      if (node.range) { button.appendChild(el("span", "run-range muted", node.range)); }
      button.addEventListener("click", function () { choose(button, node); });
      buttons.push(button);
      li.appendChild(button);
      tree.appendChild(li);
    }
    var all = el("button", "ghost run-button run-all", "All steps");
    all.type = "button";
    all.addEventListener("click", function () { choose(all, null); });
    buttons.push(all);
    var first = el("li", "run-node");
    first.appendChild(all);
    tree.appendChild(first);
    nodes.forEach(add);
    all.setAttribute("aria-pressed", "true");
    nav.appendChild(tree);
    nav.appendChild(said);
    return nav;
  }

  function evalTrace(f) {
    var box = el("div", "trace eval-trace"), panes = [];
    f.panes.forEach(function (label, p) {
      var pane = el("section", "trace-pane pane-" + p);
      pane.appendChild(el("h4", null, label));
      panes.push(pane);
      box.appendChild(pane);
    });
    function light(group) {
      box.querySelectorAll(".trace-step").forEach(function (s) {
        s.classList.toggle("linked", s.dataset.group === String(group));
      });
    }
    function card(pane, cls, group, label) {
      var c = step("div", cls, label);
      c.dataset.group = String(group);
      if (f.link) {
        c.addEventListener("click", function () { light(group); });
        c.addEventListener("focus", function () { light(group); });
      }
      panes[pane].appendChild(c);
      return c;
    }
    f.groups.forEach(function (g, n) {
      g.reasoning.forEach(function (r) {
        var c = card(0, "step-" + r.kind, n, "Reasoning, group " + (n + 1));
        if (f.numbered) { c.appendChild(el("span", "step-number", "#" + (n + 1))); }
        c.appendChild(el("div", "step-text", r.text));
      });
      g.calls.forEach(function (call) {
        var c = card(1, "step-action", n, "Call " + (call.name || "") + ", group " + (n + 1));
        var head = el("div", "step-head");
        if (f.numbered) { head.appendChild(el("span", "step-number", "#" + (n + 1))); }
        if (call.name) { head.appendChild(el("span", "step-kind", call.name)); }
        c.appendChild(head);
        if (call.call) { c.appendChild(el("code", "step-call", call.call)); }
        call.results.forEach(function (r) {
          c.appendChild(el("div", "step-result-head muted", "↳ result"));
          c.appendChild(output(r, f.max_lines, "trace-output", "Result"));
        });
      });
    });
    if (f.answer !== null && f.answer !== undefined) {
      var a = step("div", "step-answer", "Final answer");
      a.appendChild(el("div", "step-text", f.answer));
      panes[2].appendChild(a);
    } else {
      panes[2].appendChild(el("p", "muted", "No final answer in this trace."));
    }
    return walkable(box);
  }

  var OPS = { R: "read", E: "edited", W: "written", S: "searched", B: "run" };

  function codeLines(text, limit) {
    var lines = text.split("\n"), table = el("ol", "code-lines");
    lines.forEach(function (line) { table.appendChild(el("li", null, line)); });
    if (!limit || lines.length <= limit) { return table; }
    var more = el("details", "trace-fold");
    more.appendChild(el("summary", null, "File contents (" + lines.length + " lines)"));
    more.appendChild(table);
    return more;
  }

  function toolCall(call, limit) {
    var box = el("div", "tool-call tool-" + call.kind), head = el("div", "step-head");
    head.appendChild(el("span", "step-kind", call.tool));
    if (call.file) { head.appendChild(el("code", "step-file", call.file)); }
    box.appendChild(head);
    if (call.diff) {
      var diff = el("pre", "diff");
      call.diff.forEach(function (d) {
        diff.appendChild(el("span", d[0] === "+" ? "diff-add" : "diff-del", d[0] + " " + d[1] + "\n"));
      });
      box.appendChild(diff);
      if (call.output) { box.appendChild(el("p", "muted", call.output)); }
      return box;
    }
    if (call.command !== undefined) {
      box.appendChild(el("pre", "terminal-command", "$ " + call.command));
      if (call.output) { box.appendChild(output(call.output, limit, "terminal", "Output")); }
      return box;
    }
    if (call.content !== undefined) {
      box.appendChild(el("p", "muted", "New file"));
      box.appendChild(codeLines(call.content, limit));
      return box;
    }
    if (call.input) {
      box.appendChild(el("div", "muted", "Input"));
      box.appendChild(el("pre", "trace-output", call.input));
    }
    if (call.output) {
      if (call.kind === "read" || call.kind === "search") { box.appendChild(codeLines(call.output, limit)); }
      else {
        box.appendChild(el("div", "muted", "Output"));
        box.appendChild(output(call.output, limit, "trace-output", "Output"));
      }
    }
    return box;
  }

  function codingTrace(f) {
    var box = el("div", "trace coding-trace");
    if (f.files.length) {
      var files = el("details", "trace-files");
      files.open = f.files.length > 1;
      files.appendChild(el("summary", null, "Files (" + f.files.length + ")"));
      var list = el("ul");
      f.files.forEach(function (file) {
        var li = el("li");
        li.appendChild(el("code", null, file.path));
        li.appendChild(el("span", "muted", " " + file.ops.split("").map(function (o) { return OPS[o]; }).join(", ")));
        list.appendChild(li);
      });
      files.appendChild(list);
      box.appendChild(files);
    }
    var turns = el("ol", "trace-steps");
    f.turns.forEach(function (t, i) {
      var item = step("li", "turn-" + t.role, (t.role === "user" ? "User" : "Step " + (t.number || "")) + ", turn " + (i + 1));
      item.dataset.turnIndex = String(i);
      item.dataset.stepIndex = String(i);
      var head = el("div", "step-head");
      head.appendChild(el("span", "step-kind", t.role === "user" ? "User" : (t.number ? "Step " + t.number : "Agent")));
      item.appendChild(head);
      if (t.text) { item.appendChild(el("div", "step-text", t.text)); }
      t.calls.forEach(function (call) { item.appendChild(toolCall(call, f.max_lines)); });
      turns.appendChild(item);
    });
    box.appendChild(turns);
    return walkable(box);
  }

  // Several agents talking: a legend whose chips hide and show an agent's turns.
  function discussion(f) {
    var box = el("div", "trace discussion"), list = el("ol", "trace-steps");
    if (f.legend.length) {
      var legend = el("div", "trace-legend");
      f.legend.forEach(function (agent, n) {
        var chip = el("button", "ghost legend-chip speaker-" + (n % 6), agent);
        chip.type = "button";
        chip.setAttribute("aria-pressed", "true");
        chip.title = "Hide or show " + agent + "'s turns";
        chip.addEventListener("click", function () {
          var shown = chip.getAttribute("aria-pressed") !== "true";
          chip.setAttribute("aria-pressed", String(shown));
          list.querySelectorAll(".trace-step").forEach(function (t) {
            if (t.dataset.agent === agent) { t.hidden = !shown; }
          });
        });
        legend.appendChild(chip);
      });
      box.appendChild(legend);
    }
    f.turns.forEach(function (t, i) {
      var item = step("li", (t.colour !== null ? "speaker-" + t.colour : "") + (t.reply ? " reply" : ""),
                      "Turn " + (i + 1) + " of " + f.turns.length);
      item.dataset.agent = t.agent;
      item.dataset.stepIndex = String(i);
      var head = el("div", "step-head");
      if (t.number) { head.appendChild(el("span", "step-number", "[" + t.number + "]")); }
      head.appendChild(el("span", "step-kind", t.speaker || "…"));
      if (t.role) { head.appendChild(el("span", "step-role muted", t.role)); }
      if (t.addressee) { head.appendChild(el("span", "step-to muted", "→ " + t.addressee)); }
      item.appendChild(head);
      if (t.fold) {
        var fold = el("details", "trace-fold");
        fold.appendChild(el("summary", null, "What the " + (t.speaker || "environment").toLowerCase() + " said"));
        fold.appendChild(el("div", "step-text", t.text));
        item.appendChild(fold);
      } else {
        item.appendChild(el("div", "step-text", t.text));
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    return walkable(box);
  }

  // A chain of thought, step by step; a long step folds after its first lines.
  function cotTrace(f) {
    var box = el("div", "trace cot-trace"), list = el("ol", "trace-steps");
    box.appendChild(el("p", "trace-summary muted", "Reasoning: " + f.steps.length + (f.steps.length === 1 ? " step" : " steps")));
    f.steps.forEach(function (s, i) {
      var item = step("li", "step-" + s.kind, "Step " + (i + 1) + " of " + f.steps.length);
      item.dataset.stepIndex = String(i);
      var head = el("div", "step-head");
      if (f.numbered) { head.appendChild(el("span", "step-number", "Step " + (i + 1))); }
      if (s.label) { head.appendChild(el("span", "step-kind", s.label)); }
      item.appendChild(head);
      var lines = s.text.split("\n");
      if (f.max_lines && lines.length > f.max_lines) {
        item.appendChild(el("div", "step-text", lines.slice(0, f.max_lines).join("\n")));
        var more = el("details", "trace-fold");
        more.appendChild(el("summary", null, "Show " + (lines.length - f.max_lines) + " more lines"));
        more.appendChild(el("div", "step-text", lines.slice(f.max_lines).join("\n")));
        item.appendChild(more);
      } else {
        item.appendChild(el("div", "step-text", s.text));
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    return walkable(box);
  }

  window.PotatoFields.add("agent_trace", agentTrace);
  window.PotatoFields.add("eval_trace", evalTrace);
  window.PotatoFields.add("coding_trace", codingTrace);
  window.PotatoFields.add("multi_agent_discussion", discussion);
  window.PotatoFields.add("cot_trace", cotTrace);
}());
