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
  function whenDrawn(selector) {
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
      observer.observe(document, { childList: true, subtree: true });
    });
  }

  const REVIEW_DRAWN = "[data-review][data-status=pending] [data-side=proposed] .cm-content";
  let armed = null;
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
    // When the last key went down, as the browser stamped the input event:
    // the selection benchmark presses keys through the DevTools protocol, so
    // the time includes the browser's own input path, as a user's would.
    lastKeyDown() {
      return lastKeyDown;
    },
  };
})();
