/* StateGuard run viewer: tabs, state panel, timeline filters, variable lineage.
   Plain browser script, no dependencies, no network; written by eval/viewer/build.py next to
   the pages (python -m eval.viewer RUN_DIR). Pages work without it, minus the interaction. */
(function () {
  "use strict";

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }

  function sections() {
    return all(document, "section.arm");
  }

  function showArm(prefix) {
    var side = document.body.classList.contains("side-by-side");
    sections().forEach(function (s) {
      s.hidden = !side && s.id !== prefix;
    });
    all(document, "nav.tabs .tab").forEach(function (t) {
      t.classList.toggle("active", t.getAttribute("data-target") === prefix);
    });
  }

  function selectState(section, sid) {
    var prefix = section.id;
    var detail = document.getElementById(prefix + "-detail-" + sid);
    if (!detail) {
      return false;
    }
    all(section, ".state-detail").forEach(function (d) {
      d.hidden = d !== detail;
    });
    all(section, ".state-panel .placeholder").forEach(function (p) {
      p.hidden = true;
    });
    all(section, "svg g.node").forEach(function (g) {
      g.classList.toggle("selected", g.id === prefix + "-" + sid);
    });
    var panel = section.querySelector(".state-panel");
    if (panel) {
      panel.scrollTop = 0;
    }
    return true;
  }

  function applyFilters(section) {
    var repairs = section.querySelector(".f-repairs").checked;
    var rejected = section.querySelector(".f-rejected").checked;
    var variable = section.querySelector(".f-var").value;
    var active = repairs || rejected || variable !== "";
    var shownTurns = {};
    var entries = all(section, "ol.timeline > li.entry");
    var shown = 0;
    entries.forEach(function (li) {
      var tags = (li.getAttribute("data-tags") || "").split(" ");
      var vars = (li.getAttribute("data-vars") || "").split(" ");
      var ok = (!repairs || tags.indexOf("repair") >= 0) && (!rejected || tags.indexOf("rejected") >= 0) &&
        (variable === "" || vars.indexOf(variable) >= 0);
      li.hidden = !ok;
      if (ok) {
        shown += 1;
        shownTurns[li.getAttribute("data-turn")] = true;
      }
    });
    all(section, "ol.timeline > li.turn-head").forEach(function (li) {
      li.hidden = active && !shownTurns[li.getAttribute("data-turn")];
    });
    section.querySelector(".f-count").textContent = active ? shown + " of " + entries.length + " entries" : "";
    all(section, ".lineages table.lineage").forEach(function (t) {
      t.hidden = t.getAttribute("data-var") !== variable;
    });
    var data = {};
    var blob = section.querySelector("script.lineage-data");
    if (blob) {
      data = JSON.parse(blob.textContent || "{}");
    }
    var slot = data[variable] || { def: [], read: [] };
    all(section, "svg g.node.state").forEach(function (g) {
      var sid = g.id.slice(section.id.length + 1);
      var def = slot.def.indexOf(sid) >= 0;
      var read = slot.read.indexOf(sid) >= 0;
      g.classList.toggle("lin-def", variable !== "" && def);
      g.classList.toggle("lin-read", variable !== "" && read && !def);
      g.classList.toggle("dim", variable !== "" && !def && !read);
    });
  }

  function followHash() {
    var hash = decodeURIComponent(window.location.hash.slice(1));
    if (!hash) {
      return;
    }
    var prefix = hash.split("-")[0];
    var section = document.getElementById(prefix);
    if (!section || !section.classList.contains("arm")) {
      return;
    }
    showArm(prefix);
    var rest = hash.slice(prefix.length + 1);
    if (rest && selectState(section, rest)) {
      section.querySelector(".graph-area").scrollIntoView({ block: "start" });
      return;
    }
    var target = document.getElementById(hash);
    if (target && target !== section) {
      if (target.hidden) {
        all(section, ".filters input").forEach(function (i) { i.checked = false; });
        section.querySelector(".f-var").value = "";
        applyFilters(section);
      }
      var details = target.querySelector("details");
      if (details) {
        details.open = true;
      }
      target.classList.add("flash");
      window.setTimeout(function () { target.classList.remove("flash"); }, 1600);
      target.scrollIntoView({ block: "center" });
    }
  }

  function init() {
    var main = document.querySelector("main[data-default-arm]");
    if (!main) {
      return;
    }
    var toggle = document.getElementById("side-by-side");
    document.body.classList.toggle("side-by-side", !!(toggle && toggle.checked));
    showArm(main.getAttribute("data-default-arm"));
    if (toggle) {
      toggle.addEventListener("change", function () {
        document.body.classList.toggle("side-by-side", toggle.checked);
        var active = document.querySelector("nav.tabs .tab.active");
        showArm(active ? active.getAttribute("data-target") : main.getAttribute("data-default-arm"));
      });
    }
    all(document, "nav.tabs .tab").forEach(function (tab) {
      tab.addEventListener("click", function () {
        showArm(tab.getAttribute("data-target"));
      });
    });
    sections().forEach(function (section) {
      all(section, "svg g.node.state").forEach(function (g) {
        g.addEventListener("click", function () {
          var sid = g.id.slice(section.id.length + 1);
          if (selectState(section, sid) && window.history.replaceState) {
            window.history.replaceState(null, "", "#" + section.id + "-" + sid);
          }
        });
      });
      all(section, ".f-zoom").forEach(function (box) {
        box.addEventListener("change", function () {
          section.querySelector(".graph-pane").classList.toggle("actual-size", box.checked);
        });
      });
      all(section, ".filters input, .filters select").forEach(function (input) {
        input.addEventListener("change", function () { applyFilters(section); });
      });
    });
    window.addEventListener("hashchange", followHash);
    followHash();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
