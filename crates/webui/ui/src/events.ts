// The event stream (/api/events): a snapshot first, then one JSON event per
// message. When the stream drops, the page says so calmly and reconnects
// with a growing delay; a reconnect starts with a fresh snapshot. A stream
// that fails because the page is not signed in (401) is not retried.

import { api, ApiError, type ServerEvent } from "./api";

export type StreamState = "connecting" | "open" | "reconnecting" | "unauthorized";

export interface StreamHandlers {
  event(e: ServerEvent): void;
  state(s: StreamState, retryInMs?: number): void;
}

const MIN_DELAY = 1000;
const MAX_DELAY = 15_000;

export class EventStream {
  private source: EventSource | null = null;
  private delay = MIN_DELAY;
  private timer = 0;
  private stopped = false;

  constructor(private readonly h: StreamHandlers) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    this.source?.close();
    this.source = null;
  }

  /** Reconnects at once (the reviewer asked, or the page came back). */
  retryNow(): void {
    if (this.stopped || this.source) return;
    window.clearTimeout(this.timer);
    this.connect();
  }

  private connect(): void {
    this.h.state(this.delay === MIN_DELAY ? "connecting" : "reconnecting");
    const es = new EventSource("/api/events");
    this.source = es;
    es.onopen = () => {
      this.delay = MIN_DELAY;
      this.h.state("open");
    };
    es.onmessage = (m: MessageEvent<string>) => {
      let e: ServerEvent;
      try {
        e = JSON.parse(m.data) as ServerEvent;
      } catch {
        return;
      }
      if (e && typeof e === "object" && typeof e.type === "string") this.h.event(e);
    };
    es.onerror = () => {
      // EventSource hides the status: close it and find out ourselves.
      es.close();
      if (this.source === es) this.source = null;
      void this.afterError();
    };
  }

  private async afterError(): Promise<void> {
    if (this.stopped) return;
    try {
      await api.state();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.stopped = true;
        this.h.state("unauthorized");
        return;
      }
    }
    const wait = this.delay + Math.floor(Math.random() * 300);
    this.delay = Math.min(this.delay * 2, MAX_DELAY);
    this.h.state("reconnecting", wait);
    this.timer = window.setTimeout(() => this.connect(), wait);
  }
}
