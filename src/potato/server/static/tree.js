// A tree of labels (upstream's hierarchical_multiselect): each node a checkbox, indented under its
// parent (its data-depth). With auto-children, picking a node picks every node under it; with
// auto-parent, a node whose children are all picked is picked too. The search box shows the nodes
// whose name matches, with the nodes above them. annotate.js reads the picks as any multiselect's.
(function () {
  "use strict";

  function nodes(tree) { return Array.prototype.slice.call(tree.querySelectorAll(".tree-node")); }
  function depth(node) { return Number(node.dataset.depth); }

  // The nodes under the one at `i`: those after it, deeper, until one as shallow as it.
  function under(all, i) {
    var out = [];
    for (var k = i + 1; k < all.length && depth(all[k]) > depth(all[i]); k++) { out.push(all[k]); }
    return out;
  }

  function box(node) { return node.querySelector("input[type=checkbox]"); }

  document.addEventListener("change", function (ev) {
    var tree = ev.target.closest && ev.target.closest(".tree");
    if (!tree || ev.target.type !== "checkbox" || ev.target.dataset.auto) { return; }
    var all = nodes(tree), at = all.indexOf(ev.target.closest(".tree-node"));
    if (tree.dataset.autoChildren) {
      under(all, at).forEach(function (node) { box(node).checked = ev.target.checked; });
    }
    if (tree.dataset.autoParent) {  // from the deepest up, each parent whose children are all picked
      for (var k = all.length - 1; k >= 0; k--) {
        var children = under(all, k).filter(function (node) { return depth(node) === depth(all[k]) + 1; });
        if (children.length && children.every(function (node) { return box(node).checked; })) { box(all[k]).checked = true; }
      }
    }
  });

  document.addEventListener("input", function (ev) {
    if (!ev.target.classList || !ev.target.classList.contains("tree-search")) { return; }
    var tree = ev.target.closest(".tree"), all = nodes(tree), word = ev.target.value.trim().toLowerCase();
    var shown = all.map(function (node) { return !word || node.textContent.toLowerCase().indexOf(word) >= 0; });
    // A shown node's ancestors are shown too, so it is read in its place.
    for (var k = all.length - 1; k >= 0; k--) {
      if (!shown[k]) { continue; }
      for (var up = k - 1, need = depth(all[k]) - 1; up >= 0 && need >= 0; up--) {
        if (depth(all[up]) === need) { shown[up] = true; need--; }
      }
    }
    all.forEach(function (node, k) { node.hidden = !shown[k]; });
    tree.querySelector(".tree-none").hidden = shown.some(Boolean);
  });
}());
