#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs (idempotently) the Debian packages of the groups named, on
# Debian 12, as root:
#
#   scripts/install-deps.sh [build] [test] [bench] [package]
#
# build    what ./configure && make needs: the compiler, the -dev libraries,
#          meson and ninja, rst2man for the manual pages
# test     what make check needs besides: the peers (QEMU 7.2 from Debian,
#          QEMU 10.0 from bookworm-backports in /opt/qemu-10.0 through
#          scripts/install-qemu10.sh), qemu-img, libvirt, certtool,
#          matplotlib (the plot tests), clang (make fuzz)
# bench    what scripts/migbench and the plots need: the same peers, libvirt
#          (libvirtbench), matplotlib
# package  what dpkg-buildpackage, lintian and scripts/package-check need
#          (and the build group, which the package's Build-Depends lists)
#
# No group named means all four, which is what the README's Quick start and
# .ci/run use. A user who only builds runs it with "build": no libvirtd and
# no second QEMU.
set -eu
here=$(dirname "$0")

# Keep in step with debian/control's Build-Depends.
BUILD="gcc make meson ninja-build pkg-config python3 python3-docutils systemtap-sdt-dev libglib2.0-dev libjson-glib-dev zlib1g-dev libzstd-dev libslirp-dev libpixman-1-dev libgnutls28-dev"
# iproute2: libvirt's domains (tests/libvirt).
# bpftrace: test-usdt; python3-prometheus-client, prometheus (promtool): test-exporter.
# python3-pexpect: test-chardev-pty (the mux through a real terminal), test-libvirt-stock
# (virsh console); virtinst (virt-install): test-libvirt-stock.
TEST="qemu-system-x86 qemu-utils gnutls-bin libvirt-daemon-system libvirt-clients iproute2 python3-matplotlib clang libclang-rt-14-dev llvm-14 bpftrace python3-prometheus-client prometheus python3-pexpect virtinst"
BENCH="qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients python3-matplotlib"
PACKAGE="build-essential dpkg-dev debhelper lintian man-db"

groups=${*:-build test bench package}
packages=""
want_qemu10=false
for g in $groups; do
    case "$g" in
    build) packages="$packages $BUILD" ;;
    test) packages="$packages $TEST"; want_qemu10=true ;;
    bench) packages="$packages $BENCH"; want_qemu10=true ;;
    package) packages="$packages $BUILD $PACKAGE" ;;
    *) echo "install-deps: unknown group '$g' (build, test, bench, package)" >&2; exit 2 ;;
    esac
done

missing=""
for p in $packages; do
    case " $missing " in *" $p "*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages of: $groups present"
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
if $want_qemu10; then
    "$here/install-qemu10.sh"
fi
