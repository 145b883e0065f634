// Keyboard review of grade leaves: j/k move, a/p/f/r label, n note, g next grade (or next queue page),
// [/] or the left/right arrows the previous/next page of a grade's leaves.
// Labels are sent with fetch and the session's CSRF token; every text from the server is set with
// textContent, never as markup.
(function () {
  "use strict";

  const leaves = Array.from(document.querySelectorAll("section.leaf"));
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute("content") : "";
  const status = document.getElementById("status");
  const mineCount = document.getElementById("mine-count");
  let current = -1;
  let pending = 0;

  function say(text, isError) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
    document.body.dataset.pending = String(pending);
  }

  function select(index) {
    if (!leaves.length) return;
    const next = Math.max(0, Math.min(leaves.length - 1, index));
    if (current >= 0) {
      leaves[current].classList.remove("current");
      leaves[current].removeAttribute("aria-current");
    }
    current = next;
    const leaf = leaves[current];
    leaf.classList.add("current");
    leaf.setAttribute("aria-current", "true");
    leaf.focus({ preventScroll: true });
    leaf.scrollIntoView({ block: "nearest" });
  }

  // Opens the page of leaves the pager names in `attribute`, if there is one.
  function turnPage(attribute, none) {
    const pager = document.getElementById("pager");
    const url = pager ? pager.getAttribute(attribute) : "";
    if (url) window.location.assign(url); else say(none);
  }

  // A link to a leaf that is on another page of its grade (#leaf-ID): ask the server for the page holding it.
  function findLeafPage() {
    const hash = window.location.hash;
    if (!hash.startsWith("#leaf-") || !document.getElementById("pager")) return false;
    if (document.getElementById(decodeURIComponent(hash.slice(1)))) return false;
    const url = new URL(window.location.href);
    if (url.searchParams.has("leaf")) return false;
    url.searchParams.set("leaf", decodeURIComponent(hash.slice("#leaf-".length)));
    ["page", "stage", "verdict"].forEach(function (name) { url.searchParams.delete(name); });
    window.location.replace(url.toString());
    return true;
  }

  function labelSpan(label) {
    const span = document.createElement("span");
    span.className = "label l-" + label;
    span.textContent = label;
    return span;
  }

  function noteSpan(note) {
    const span = document.createElement("span");
    span.className = "note";
    span.textContent = note;
    return span;
  }

  function show(leaf, data) {
    const wasLabelled = Boolean(leaf.dataset.mine);
    leaf.dataset.mine = data.mine.label;
    leaf.classList.add("labelled");
    const mine = leaf.querySelector(".mine");
    mine.replaceChildren("Your label: ", labelSpan(data.mine.label));
    if (data.mine.note) mine.append(" ", noteSpan(data.mine.note));
    const others = leaf.querySelector(".others");
    others.replaceChildren(...data.others.map(function (other) {
      const item = document.createElement("li");
      item.append(other.rater_id + ": ", labelSpan(other.label));
      if (other.note) item.append(" ", noteSpan(other.note));
      return item;
    }));
    const hidden = leaf.querySelector(".hidden-count");
    if (hidden) hidden.hidden = true;
    if (mineCount && !wasLabelled) mineCount.textContent = String(Number(mineCount.textContent) + 1);
  }

  async function send(leaf, value) {
    const form = leaf.querySelector("form.label-form");
    const body = new URLSearchParams();
    body.set("label", value);
    body.set("note", form.querySelector("textarea[name=note]").value);
    body.set("csrf_token", csrf);
    pending += 1;
    say("Saving " + value + " on " + leaf.dataset.leaf + " …");
    try {
      const response = await fetch(form.action, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Accept": "application/json", "X-CSRF-Token": csrf },
        body: body,
      });
      const data = await response.json().catch(function () { return null; });
      pending -= 1;
      if (!response.ok || !data || data.error) {
        const message = data && data.error ? data.error.message : "HTTP " + response.status;
        say("Not saved (" + leaf.dataset.leaf + "): " + message, true);
        return;
      }
      show(leaf, data);
      say("Saved " + data.mine.label + " on " + leaf.dataset.leaf);
    } catch (error) {
      pending -= 1;
      say("Not saved (" + leaf.dataset.leaf + "): " + error, true);
    }
  }

  function label(leaf, key) {
    const button = leaf.querySelector('form.label-form button[data-key="' + key + '"]');
    if (!button) {
      if (key === "a") say("The judge left " + leaf.dataset.leaf + " unscored: nothing to agree with", true);
      return false;
    }
    send(leaf, button.value);
    return true;
  }

  function onNoteKey(event, field) {
    const leaf = field.closest("section.leaf");
    if (event.key === "Escape") {
      event.preventDefault();
      field.blur();
      if (leaf) leaf.focus({ preventScroll: true });
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      field.blur();
      if (leaf && leaf.dataset.mine) {
        send(leaf, leaf.dataset.mine);
      } else {
        say("Note kept: give a label (a, p, f, r) to save it with");
      }
      if (leaf) leaf.focus({ preventScroll: true });
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target instanceof HTMLElement && target.matches("textarea, input, select")) {
      if (target.matches("textarea[name=note]")) onNoteKey(event, target);
      return;
    }
    const pageKeys = document.getElementById("pager") ? ["[", "]", "ArrowLeft", "ArrowRight"] : [];
    if (!leaves.length && event.key !== "g" && pageKeys.indexOf(event.key) < 0) return;
    if (event.shiftKey && event.key.startsWith("Arrow")) return;
    const leaf = leaves[current];
    switch (pageKeys.indexOf(event.key) >= 0 ? event.key : "") {
      case "[": case "ArrowLeft": turnPage("data-prev-page", "This is the first page"); event.preventDefault(); return;
      case "]": case "ArrowRight": turnPage("data-next-page", "This is the last page"); event.preventDefault(); return;
      default: break;
    }
    switch (event.key) {
      case "j": select(current + 1); break;
      case "k": select(current - 1); break;
      case "n": if (leaf) leaf.querySelector("textarea[name=note]").focus(); break;
      case "g": {
        const holder = document.querySelector("[data-next-grade]");
        const url = holder ? holder.getAttribute("data-next-grade") : "";
        if (url) window.location.assign(url); else say("This is the last one");
        break;
      }
      case "?": {
        const keys = document.getElementById("keys");
        if (keys) keys.open = !keys.open;
        break;
      }
      default:
        if (!leaf || !/^[apfri]$/.test(event.key)) return;
        if (label(leaf, event.key)) select(current + 1);
    }
    event.preventDefault();
  });

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("label-form")) return;
    const button = event.submitter;
    if (!button || !button.value) return;
    event.preventDefault();
    const leaf = form.closest("section.leaf");
    select(leaves.indexOf(leaf));
    send(leaf, button.value);
  });

  document.addEventListener("click", function (event) {
    const leaf = event.target instanceof Element ? event.target.closest("section.leaf") : null;
    if (leaf && leaves.indexOf(leaf) !== current) {
      const index = leaves.indexOf(leaf);
      if (current >= 0) leaves[current].classList.remove("current");
      current = index;
      leaf.classList.add("current");
    }
  });

  window.addEventListener("hashchange", findLeafPage);  // the same page with another leaf's #anchor
  if (findLeafPage()) return;
  if (leaves.length) {
    const fromHash = window.location.hash ? leaves.findIndex(function (l) { return "#" + l.id === window.location.hash; }) : -1;
    const unlabelled = leaves.findIndex(function (l) { return !l.dataset.mine; });
    select(fromHash >= 0 ? fromHash : Math.max(0, unlabelled));
  }
  document.body.dataset.ready = "true";
})();
