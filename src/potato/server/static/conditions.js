// display_logic, as potato/study/conditions.py decides it: a question shown only for some answers.
// Shared by the annotation page and the study pages (loaded before either page's script).
(function () {
  "use strict";
  function isEmpty(value) { return value === null || value === "" || (Array.isArray(value) && value.length === 0); }

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


  window.PotatoConditions = { holds: holds, isEmpty: isEmpty };
}());
