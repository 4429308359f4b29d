/**
 * @ccbridge/client: Claude Code's IDE integration for Node and Electron
 * editors, through the `ccbridge serve --stdio` sidecar.
 *
 * ```ts
 * import { start } from "@ccbridge/client";
 * const bridge = await start({ workspaceFolders: ["/home/me/project"], ideName: "Kale" });
 * bridge.onShowDiff(async (diff) => ({ decision: "accepted" }));
 * bridge.reportSelection({ filePath, text, selection: { start, end } });
 * await bridge.stop();
 * ```
 *
 * The README has the whole API; docs/editor-protocol.md in the ccbridge
 * repository is the protocol underneath.
 */
export { start } from "./start.js";
export { Bridge } from "./bridge.js";
export {
  capabilitiesOf,
  type ApproveHandler,
  type Awaitable,
  type BridgeEvents,
  type BridgeListener,
  type BridgeState,
  type BridgeWarning,
  type CloseDiffHandler,
  type DiffContext,
  type Disposable,
  type ExitInfo,
  type RequestHandlers,
  type ShowDiffHandler,
  type StartOptions,
} from "./types.js";
export {
  BridgeError,
  BridgeStoppedError,
  BridgeTimeoutError,
  ChangeConflictError,
  ChangeStaleError,
  INSTALL_HINT,
  ProtocolVersionError,
  RemoteError,
  SidecarExitedError,
  SpawnError,
  type BridgeErrorCode,
} from "./errors.js";
export { resolveBin, serveArgs } from "./process.js";
export { beforeText } from "./baseline.js";
export { commandLine, needsQuoting, PathMap, shellQuote, type PathMapping } from "./remote.js";
export * from "./protocol.js";
