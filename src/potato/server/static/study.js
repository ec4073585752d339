// A study page: questions whose display_logic depends on earlier answers appear and disappear as
// those are given. The form works without this script (the server decides what was asked).
(function () {
  "use strict";
  var form = document.querySelector(".study-form");
  if (!form || !window.PotatoConditions) { return; }
  var questions = Array.prototype.slice.call(form.querySelectorAll("fieldset.question"));

  function answerOf(fs) {
    var type = fs.dataset.type;
    if (type === "multiselect") {
      return Array.prototype.map.call(fs.querySelectorAll("input:checked"), function (i) { return i.value; });
    }
    var checked = fs.querySelector("input[type=radio]:checked");
    if (checked) { return checked.value; }
    var field = fs.querySelector("textarea, select, input:not([type=radio]):not([type=checkbox])");
    if (!field || field.value === "") { return null; }
    return (type === "number" || type === "slider") ? Number(field.value) : field.value;
  }

  // The answers given on the pages before this one, which a question here may hang on.
  var earlier = JSON.parse(form.dataset.earlier || "{}");

  function update() {
    var answers = JSON.parse(JSON.stringify(earlier));
    questions.forEach(function (fs) {
      var logic = fs.dataset.logic ? JSON.parse(fs.dataset.logic) : null;
      if (logic) {
        var results = logic.conditions.map(function (c) { return window.PotatoConditions.holds(c, answers[c.schema]); });
        fs.hidden = !(logic.any ? results.some(Boolean) : results.every(Boolean));
        fs.disabled = fs.hidden;  // a hidden question sends nothing: it was not asked
      }
      if (!fs.hidden) { answers[fs.dataset.schema] = answerOf(fs); }
    });
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();

  // Keys: the page starts on its first question (the first Tab no longer lands on the theme
  // button, where Space switched the theme), and 1-9 pick that choice of the question the focus is
  // in, or of the first question with choices, as the annotation page's keys do.
  function choicesOf(fs) {
    return Array.prototype.slice.call(fs.querySelectorAll("input[type=radio], input[type=checkbox]"));
  }
  function visible() { return questions.filter(function (fs) { return !fs.hidden; }); }
  var start = null;
  visible().some(function (fs) {
    start = fs.querySelector("input:checked") || fs.querySelector("input, textarea, select");
    return start;
  });
  start = start || document.getElementById("continue");
  if (start && (!document.activeElement || document.activeElement === document.body)) {
    start.focus({preventScroll: true});
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || !/^[1-9]$/.test(e.key)) { return; }
    var target = e.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
        (target.tagName === "INPUT" && !/^(radio|checkbox)$/.test(target.type)))) { return; }
    var here = target && target.closest ? target.closest("fieldset.question") : null;
    var fs = (here && !here.hidden && choicesOf(here).length) ? here :
      visible().filter(function (q) { return choicesOf(q).length; })[0];
    var choice = fs ? choicesOf(fs)[Number(e.key) - 1] : null;
    if (!choice) { return; }
    e.preventDefault();
    choice.checked = choice.type === "checkbox" ? !choice.checked : true;
    choice.focus();
    choice.dispatchEvent(new Event("change", {bubbles: true}));
  });
}());
