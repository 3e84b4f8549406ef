#!/usr/bin/env bash
# Downloads (here, where apt reaches Debian's mirrors) the Debian packages the GPU machine lacks:
# sqlite3.h, GoogleTest, Gloo's headers, and libaio / liburing for NVMe offload (their static
# archives are linked, so the GPU machine needs no runtime package). They land in .device/debs,
# which is git-ignored and carried to the device call; scripts/build_on_gpu.sh unpacks them there
# with dpkg-deb -x.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device/debs
cd .device/debs
apt-get download -q libsqlite3-dev libgtest-dev libgmock-dev googletest libgloo-dev libaio-dev liburing-dev 2>/dev/null
ls -1
