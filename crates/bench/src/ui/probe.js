// Timing probes the UI benchmarks install in the review page before its own
// scripts (crates/bench/src/ui/mod.rs). Every time is in milliseconds since
// the epoch (performance.timeOrigin + performance.now()), so the benchmark
// compares it with its own clock on the same machine.
(() => {
  "use strict";
  const now = () => performance.timeOrigin + performance.now();

  // "Drawn": the first task after the frame in which `selector` first
  // matched has been rendered. The element is on screen and the page's main
  // thread is free to take input, so for a large diff this is also the time
  // to interactive.
  // With `attributes`, an attribute change (a button enabled) counts too.
  function whenDrawn(selector, attributes = false) {
    return new Promise((resolve) => {
      const settle = () => requestAnimationFrame(() => setTimeout(() => resolve(now()), 0));
      if (document.querySelector(selector)) {
        settle();
        return;
      }
      const observer = new MutationObserver(() => {
        if (document.querySelector(selector)) {
          observer.disconnect();
          settle();
        }
      });
      observer.observe(document, { childList: true, subtree: true, attributes });
    });
  }

  // "Drawn" for `selector`, looked for only once the next key press has
  // been handled (a task after it), so what matched before the key does
  // not count.
  function drawnAfterNextKey(selector) {
    return new Promise((resolve) => {
      const onKey = () => {
        document.removeEventListener("keydown", onKey, true);
        setTimeout(() => whenDrawn(selector, true).then(resolve), 0);
      };
      document.addEventListener("keydown", onKey, true);
    });
  }

  const REVIEW_DRAWN = "[data-review][data-status=pending] [data-side=proposed] .cm-content";
  // The current hunk's marker, its Accept button enabled, in a card that
  // shows a review version other than `version` (the one before the key):
  // the decision is shown and the card ready for the next one.
  const hunkReady = (version) =>
    `[data-review][data-status=pending]:not([data-version="${version}"]) .hunk-marker[data-current] [data-action=accept-hunk]:not([disabled])`;
  let armed = null;
  let hunkArmed = null;
  let lastKeyDown = null;
  document.addEventListener(
    "keydown",
    (e) => {
      lastKeyDown = performance.timeOrigin + e.timeStamp;
    },
    { capture: true },
  );

  window.__ccbridgeBench = {
    // Page load: the pending review drawn, from the start of the navigation.
    load: whenDrawn(REVIEW_DRAWN).then((t) => t - performance.timeOrigin),
    // Arms a probe for the next pending review; `drawn` awaits it.
    arm() {
      armed = whenDrawn(REVIEW_DRAWN);
      return true;
    },
    drawn() {
      return armed;
    },
    // The number of the current hunk of the pending review (its marker).
    currentHunk() {
      const m = document.querySelector("[data-review][data-status=pending] .hunk-marker[data-current]:not(.mirror)");
      return m ? Number(m.dataset.hunk) : null;
    },
    // Arms a probe for a hunk current and ready after the next key press
    // (`a`/`r`); `hunkShown` awaits it.
    armHunk() {
      const card = document.querySelector("[data-review][data-status=pending]");
      hunkArmed = drawnAfterNextKey(hunkReady(card?.dataset.version ?? ""));
      return true;
    },
    hunkShown() {
      return hunkArmed;
    },
    // What the pending review shows of its hunks (for an error message).
    hunkState() {
      const card = document.querySelector("[data-review][data-status=pending]");
      if (!card) return "no pending review";
      const markers = [...card.querySelectorAll(".hunk-marker:not(.mirror)")].map(
        (m) => `${m.dataset.hunk}${m.hasAttribute("data-current") ? "*" : ""}${m.hasAttribute("data-accepted") ? "+" : ""}`,
      );
      return {
        position: card.querySelector(".hunk-position")?.textContent,
        markers: markers.join(" "),
        dirty: card.classList.contains("is-dirty"),
        scrollTop: card.querySelector(".cm-mergeView")?.scrollTop ?? null,
        windowY: scrollY,
      };
    },
    // When the last key went down, as the browser stamped the input event:
    // the selection benchmark presses keys through the DevTools protocol, so
    // the time includes the browser's own input path, as a user's would.
    lastKeyDown() {
      return lastKeyDown;
    },
  };
})();
