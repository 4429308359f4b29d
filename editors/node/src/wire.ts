/**
 * Small JSON-RPC helpers the bridge needs beside vscode-jsonrpc: which
 * errors are the transport's rather than ccbridge's, the protocol's
 * "method not found" answer, and bounded waiting.
 */
import { ErrorCodes, ResponseError } from "vscode-jsonrpc/node";
import { BridgeTimeoutError } from "./errors.js";
import { ErrorCode } from "./protocol.js";

/**
 * vscode-jsonrpc's own codes for a failed write, a failed read, a disposed
 * or inactive connection; ccbridge's answers never use them.
 */
export function isTransportError(code: number): boolean {
  return (
    code === ErrorCodes.MessageWriteError ||
    code === ErrorCodes.MessageReadError ||
    code === ErrorCodes.PendingResponseRejected ||
    code === ErrorCodes.ConnectionInactive
  );
}

/** Resolves after `ms`, without keeping the process alive. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The protocol's answer to a request nobody handles (Claude: "the editor does not support …"). */
export function methodNotFound(method: string, who = "this editor"): ResponseError<string> {
  return new ResponseError(ErrorCode.MethodNotFound, `${who} has no handler for ${method}`, method);
}

/** `data.supported` of a refused `initialize`: the versions ccbridge speaks. */
export function supportedOf(data: unknown): number[] | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const s = (data as { supported?: unknown }).supported;
  return Array.isArray(s) && s.every((v) => typeof v === "number") ? (s as number[]) : undefined;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * `promise`, or a {@link BridgeTimeoutError} after `ms` naming `what`
 * (with the sidecar's stderr tail, which often says why it hangs).
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  stderrTail?: () => string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BridgeTimeoutError(what, ms, stderrTail?.())), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
