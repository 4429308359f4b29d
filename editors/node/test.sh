#!/bin/sh
# The Node client's tests: installs the locked dependencies, then type-checks,
# builds dist/ (ESM, CommonJS, .d.ts) and runs the tests under `node --test`
# against the real ccbridge binary named by CCBRIDGE_BIN.
#
#   cargo build -p ccbridge
#   CCBRIDGE_BIN=$PWD/target/debug/ccbridge editors/node/test.sh
#
# Uses the node and npm on PATH (Node 20 or newer). With CCBRIDGE_CACHE set,
# npm's cache lives in $CCBRIDGE_CACHE/npm.
set -eu

if [ -z "${CCBRIDGE_BIN:-}" ]; then
  echo "editors/node/test.sh: CCBRIDGE_BIN is not set; build ccbridge (cargo build -p ccbridge) and run CCBRIDGE_BIN=\$PWD/target/debug/ccbridge editors/node/test.sh" >&2
  exit 1
fi
case "$CCBRIDGE_BIN" in
  /*) ;;
  *) CCBRIDGE_BIN="$(cd "$(dirname "$CCBRIDGE_BIN")" && pwd)/$(basename "$CCBRIDGE_BIN")"; export CCBRIDGE_BIN ;;
esac
cd "$(dirname "$0")"
if [ ! -x "$CCBRIDGE_BIN" ]; then
  echo "editors/node/test.sh: CCBRIDGE_BIN=$CCBRIDGE_BIN is not an executable; build it with cargo build -p ccbridge" >&2
  exit 1
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "editors/node/test.sh: node and npm (Node 20 or newer) must be on PATH" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "editors/node/test.sh: Node $(node --version) is too old; the package needs Node 20 or newer" >&2
  exit 1
fi

echo "editors/node: node $(node --version), npm $(npm --version), ccbridge $CCBRIDGE_BIN"
if [ -n "${CCBRIDGE_CACHE:-}" ]; then
  npm ci --no-audit --no-fund --cache "$CCBRIDGE_CACHE/npm"
else
  npm ci --no-audit --no-fund
fi
npm test
