// Telling the reviewer a review (or a question from the workspace tools)
// arrived while the tab was in the background: "(n) " before the page title, and a desktop notification when
// they switched that on (permission is asked only on their click).

import { h, replace } from "./dom";
import { note } from "./notes";
import { prefs } from "./prefs";

let unseen = 0;
let baseTitle = "ccbridge";
let button: HTMLButtonElement | null = null;

function supported(): boolean {
  return typeof Notification !== "undefined";
}

function enabled(): boolean {
  return prefs.notify() && supported() && Notification.permission === "granted";
}

function renderTitle(): void {
  document.title = (unseen ? `(${unseen}) ` : "") + baseTitle;
}

export function setBaseTitle(t: string): void {
  baseTitle = t;
  renderTitle();
}

function renderButton(): void {
  if (!button) return;
  const on = enabled();
  button.setAttribute("aria-pressed", String(on));
  const label = on ? "Notifications on" : "Notify me";
  button.setAttribute("aria-label", label);
  replace(button, h("span", { class: "label-long" }, label), h("span", { class: "label-short", "aria-hidden": "true" }, on ? "Notify ✓" : "Notify"));
  button.title = on
    ? "Desktop notifications for new reviews while this tab is in the background (click to turn off)"
    : "Get a desktop notification when Claude proposes an edit while this tab is in the background";
}

export function notifyButton(): HTMLButtonElement {
  button = h("button", {
    type: "button",
    class: "btn quiet small",
    "data-action": "notify",
    onclick: () => void toggle(),
  });
  button.hidden = !supported();
  renderButton();
  return button;
}

async function toggle(): Promise<void> {
  if (enabled()) {
    prefs.setNotify(false);
    renderButton();
    return;
  }
  let p = Notification.permission;
  if (p === "default") p = await Notification.requestPermission();
  if (p === "granted") {
    prefs.setNotify(true);
    note("You will get a notification when a review arrives while this tab is in the background.");
  } else {
    note("The browser does not allow notifications for this page; the tab title still shows new reviews.", "warn");
  }
  renderButton();
}

/** A new review arrived. */
export function reviewArrived(path: string): void {
  attention("Claude proposes an edit", path, "ccbridge-review");
}

/** A workspace tool call waits for the user's yes or no. */
export function approvalArrived(summary: string): void {
  attention("Claude asks for your approval", summary, "ccbridge-approval");
}

function attention(title: string, body: string, tag: string): void {
  if (!document.hidden) return;
  unseen++;
  renderTitle();
  if (enabled()) {
    try {
      const n = new Notification(title, { body, tag });
      n.onclick = () => {
        window.focus();
        n.close();
      };
    } catch {
      // Some platforms allow notifications only from a service worker.
    }
  }
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && unseen) {
    unseen = 0;
    renderTitle();
  }
});
