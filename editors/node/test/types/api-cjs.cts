// The same package through `require`: dist/cjs/*.d.ts.
import client = require("@ccbridge/client");

export async function usage(): Promise<void> {
  const bridge: client.Bridge = await client.start({ workspaceFolders: ["/w"], ideName: "Kale" });
  bridge.onShowDiff(() => ({ decision: "rejected" }));
  const version: 3 = client.PROTOCOL_VERSION;
  void version;
  await bridge.stop();
}
