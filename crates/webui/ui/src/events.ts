// The event stream (/api/events): a snapshot first, then one JSON event per
// message. When the stream drops, the page says so calmly and reconnects
// with a growing delay; a reconnect starts with a fresh snapshot. A stream
// that fails because the page is not signed in (401) is not retried, and
// once ccbridge has not answered at all for GIVE_UP_MS the page says it has
// stopped and stops trying (a button starts again).
//
// Read with fetch rather than EventSource: EventSource cannot send the
// session header (only cookies, which the server does not take).

import { api, ApiError, authHeaders, session, type ServerEvent } from "./api";

export type StreamState = "connecting" | "open" | "reconnecting" | "unauthorized" | "stopped";

export interface StreamHandlers {
  event(e: ServerEvent): void;
  state(s: StreamState, retryInMs?: number): void;
}

const MIN_DELAY = 1000;
const MAX_DELAY = 15_000;
/** No answer at all for this long: ccbridge has stopped. */
export const GIVE_UP_MS = 120_000;

/** When to try again after the stream dropped, and when to stop trying. */
export class Retry {
  delay = MIN_DELAY;
  /** Since when nothing answered; null while ccbridge answers. */
  private downSince: number | null = null;

  /** The stream is open again. */
  opened(): void {
    this.delay = MIN_DELAY;
    this.downSince = null;
  }

  /** A try failed (`answered`: ccbridge answered something); the wait
   * before the next, or null to stop trying. */
  failed(answered: boolean, now: number): number | null {
    if (answered) this.downSince = null;
    else this.downSince ??= now;
    if (this.downSince !== null && now - this.downSince >= GIVE_UP_MS) return null;
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, MAX_DELAY);
    return wait;
  }

  get first(): boolean {
    return this.delay === MIN_DELAY;
  }
}

/** Splits a text/event-stream into the data of its events. */
export class EventParser {
  private buffer = "";

  /** The complete events' data in `chunk` (and what came before it). */
  push(chunk: string): string[] {
    this.buffer += chunk.replace(/\r\n?/g, "\n");
    const out: string[] = [];
    let end: number;
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(l.startsWith("data: ") ? 6 : 5));
      if (data.length) out.push(data.join("\n"));
    }
    return out;
  }
}

export class EventStream {
  private abort: AbortController | null = null;
  private retry = new Retry();
  private timer = 0;
  private stopped = false;

  constructor(private readonly h: StreamHandlers) {}

  start(): void {
    this.stopped = false;
    this.retry = new Retry();
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    this.abort?.abort();
    this.abort = null;
  }

  /** Reconnects at once (the reviewer asked, or the page came back). */
  retryNow(): void {
    if (this.stopped || this.abort) return;
    window.clearTimeout(this.timer);
    void this.connect();
  }

  private async connect(): Promise<void> {
    this.h.state(this.retry.first ? "connecting" : "reconnecting");
    const abort = new AbortController();
    this.abort = abort;
    try {
      const resp = await fetch("/api/events", {
        headers: authHeaders(),
        credentials: "omit",
        cache: "no-store",
        signal: abort.signal,
      });
      if (resp.status === 401) {
        this.unauthorized();
        return;
      }
      if (!resp.ok || !resp.body) throw new Error(`${resp.status}`);
      this.retry.opened();
      this.h.state("open");
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new EventParser();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const data of parser.push(value)) this.dispatch(data);
      }
    } catch {
      // Dropped or refused: retried below.
    }
    if (this.abort === abort) this.abort = null;
    if (!abort.signal.aborted) await this.afterError();
  }

  private dispatch(data: string): void {
    let e: ServerEvent;
    try {
      e = JSON.parse(data) as ServerEvent;
    } catch {
      return;
    }
    if (e && typeof e === "object" && typeof e.type === "string") this.h.event(e);
  }

  private unauthorized(): void {
    this.stopped = true;
    // A session from an earlier run of ccbridge: forget it.
    session.clear();
    this.h.state("unauthorized");
  }

  private async afterError(): Promise<void> {
    if (this.stopped) return;
    let answered = true;
    try {
      await api.state();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.unauthorized();
        return;
      }
      answered = !(e instanceof ApiError && e.status === 0);
    }
    const next = this.retry.failed(answered, Date.now());
    if (next === null) {
      this.stopped = true;
      this.h.state("stopped");
      return;
    }
    const wait = next + Math.floor(Math.random() * 300);
    this.h.state("reconnecting", wait);
    this.timer = window.setTimeout(() => void this.connect(), wait);
  }
}
