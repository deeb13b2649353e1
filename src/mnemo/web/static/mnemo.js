// mnemo's page works without this file; it only adds comfort.
(function () {
  "use strict";

  // Flash messages are in the page from the start; re-set them so that screen
  // readers announce them as a live update.
  var live = document.querySelector(".flashes[aria-live]");
  if (live && live.children.length) {
    var items = Array.prototype.slice.call(live.children);
    live.textContent = "";
    window.setTimeout(function () {
      items.forEach(function (item) { live.appendChild(item); });
    }, 100);
  }

  // Ask before doing something that is hard to undo.
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute && event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  // What folds on a phone is open on a wide screen (<details data-open-wide>).
  if (window.matchMedia && window.matchMedia("(min-width: 40.01rem)").matches) {
    Array.prototype.forEach.call(document.querySelectorAll("details[data-open-wide]"), function (d) {
      d.open = true;
    });
  }

  // A new API key: select it all on focus, ready to copy.
  Array.prototype.forEach.call(document.querySelectorAll("[data-select-on-focus]"), function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });

  // Action menus (<details class="menu">): one open at a time; Escape or a click elsewhere
  // closes it, and Escape gives the focus back to its button.
  var menus = document.querySelectorAll("details.menu");
  function closeMenus(except) {
    Array.prototype.forEach.call(menus, function (menu) {
      if (menu !== except) { menu.open = false; }
    });
  }
  Array.prototype.forEach.call(menus, function (menu) {
    menu.addEventListener("toggle", function () { if (menu.open) { closeMenus(menu); } });
  });
  document.addEventListener("click", function (event) {
    closeMenus(event.target.closest && event.target.closest("details.menu"));
  });
  document.addEventListener("keydown", function (event) {
    var open = event.key === "Escape" && document.querySelector("details.menu[open]");
    if (open) {
      open.open = false;
      open.querySelector("summary").focus();
    }
  });

  // Review and memories: a "tick all" box beside the bulk buttons.
  Array.prototype.forEach.call(document.querySelectorAll("[data-select-all]"), function (holder) {
    var name = holder.getAttribute("data-select-all");
    var boxes = document.querySelectorAll('input[type="checkbox"][name="' + name + '"]');
    if (!boxes.length) { return; }
    var wrap = document.createElement("span");
    wrap.className = "choice";
    var all = document.createElement("input");
    all.type = "checkbox";
    all.id = "select-all-" + name;
    var label = document.createElement("label");
    label.htmlFor = all.id;
    label.textContent = "Tick all";
    wrap.appendChild(all);
    wrap.appendChild(label);
    holder.insertBefore(wrap, holder.firstChild);
    all.addEventListener("change", function () {
      Array.prototype.forEach.call(boxes, function (box) { box.checked = all.checked; });
    });
  });

  // Try it: once learning from a reply's turn settles, say what memory learnt from it.
  Array.prototype.forEach.call(document.querySelectorAll("[data-turn][data-pending]"), function (note) {
    var tries = 0;
    function look() {
      tries += 1;
      window.fetch("/try/turns/" + encodeURIComponent(note.getAttribute("data-turn")), {
        headers: { Accept: "application/json" }
      }).then(function (reply) {
        return reply.ok ? reply.json() : null;
      }).then(function (found) {
        if (found && found.settled) {
          note.innerHTML = found.html;  // rendered (and escaped) by the server's own template
          note.removeAttribute("data-pending");
        } else if (found && tries < 120) {
          window.setTimeout(look, 1000);
        }
      }).catch(function () {
        if (tries < 120) { window.setTimeout(look, 2000); }
      });
    }
    window.setTimeout(look, 500);
  });
})();
