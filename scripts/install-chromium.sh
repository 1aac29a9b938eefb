#!/usr/bin/env bash
# Install Debian's headless-capable Chromium for the viewer's browser tests (tests/viewer/).
# Idempotent and quick when it is there already: nothing is fetched then. Installing needs root
# (CI runs the test setup as root); without it the script says what to run and lets the rest of
# the setup go on: the browser tests then fail saying the same.
set -euo pipefail
for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "warning: chromium is missing and installing it needs root:" \
        "run 'sudo bash scripts/install-chromium.sh' (the viewer's browser tests need it)" >&2
    exit 0
fi
echo "installing chromium (the viewer's browser tests drive it headless)..." >&2
export DEBIAN_FRONTEND=noninteractive
# the package lists may be stale or absent in a fresh container: refresh them once, then install
if ! apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends chromium >/dev/null
fi
command -v chromium >/dev/null
