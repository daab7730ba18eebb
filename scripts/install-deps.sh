#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs (idempotently) every Debian package the build, the tests, the demo
# and the benchmarks need, then QEMU 10.0 beside Debian's 7.2 (the second
# peer, scripts/install-qemu10.sh). Run as root on Debian 12.
set -eu
here=$(dirname "$0")

PACKAGES="gcc make meson ninja-build pkg-config libglib2.0-dev libjson-glib-dev python3 qemu-system-x86 clang libclang-rt-14-dev llvm-14 zlib1g-dev libzstd-dev libslirp-dev libpixman-1-dev python3-matplotlib libvirt-daemon-system libvirt-clients iproute2 libgnutls28-dev gnutls-bin qemu-utils systemtap-sdt-dev bpftrace python3-prometheus-client prometheus"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
else
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: need root to install:$missing" >&2
        exit 1
    fi
    echo "install-deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
fi
"$here/install-qemu10.sh"
