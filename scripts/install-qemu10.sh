#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs (idempotently) QEMU 10.0 from Debian's bookworm-backports beside
# Debian 12's QEMU 7.2, never replacing it: the packages qemu-system-x86,
# qemu-system-data and qemu-system-common at the backports version are
# fetched with a private apt configuration (the machine's sources and apt
# state are not touched) and unpacked into PREFIX (default /opt/qemu-10.0).
# PREFIX/bin/qemu-system-x86_64 runs it with its own data and module
# directories. Its libraries are those QEMU 7.2 already pulled in.
# Run as root on Debian 12; scripts/install-deps.sh calls it.
set -eu

PREFIX=${QEMU10_PREFIX:-/opt/qemu-10.0}
SUITE=bookworm-backports
MIRROR=${QEMU10_MIRROR:-http://deb.debian.org/debian}
# The upstream series we want; apt picks the newest Debian revision of it.
SERIES="1:10.0."
PKGS="qemu-system-x86 qemu-system-data qemu-system-common"
WRAPPER="$PREFIX/bin/qemu-system-x86_64"

if [ -x "$WRAPPER" ] && "$WRAPPER" --version 2>/dev/null | grep -q "version 10\.0\."; then
    echo "install-qemu10: $("$WRAPPER" --version | head -n 1) in $PREFIX"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-qemu10: need root to install QEMU 10.0 into $PREFIX" >&2
    exit 1
fi

state=$(mktemp -d /var/tmp/qemu10-apt.XXXXXX)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
echo "deb $MIRROR $SUITE main" > "$state/sources.list"
# Only the private list: the machine's own sources, lists and cache stay as they are.
APT_OPTS="-o Dir::Etc::SourceList=$state/sources.list -o Dir::Etc::SourceParts=/dev/null \
-o Dir::State::Lists=$state/lists -o Dir::Cache=$state/cache -o APT::Sandbox::User=root"

echo "install-qemu10: reading $SUITE's package list"
# shellcheck disable=SC2086
apt-get $APT_OPTS -qq update
# shellcheck disable=SC2086
version=$(apt-cache $APT_OPTS madison qemu-system-x86 | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
          grep -F "$SERIES" | head -n 1)
if [ -z "$version" ]; then
    echo "install-qemu10: $SUITE has no qemu-system-x86 $SERIES*" >&2
    exit 1
fi
echo "install-qemu10: fetching $PKGS at $version"
specs=""
for p in $PKGS; do
    specs="$specs $p=$version"
done
# shellcheck disable=SC2086
(cd "$state/debs" && apt-get $APT_OPTS -qq download $specs)

# Unpacked next to the old tree, then swapped in: a failure leaves no half tree.
rm -rf "$PREFIX.new"
mkdir -p "$PREFIX.new/bin"
for deb in "$state"/debs/*.deb; do
    dpkg-deb -x "$deb" "$PREFIX.new"
done
if [ ! -x "$PREFIX.new/usr/bin/qemu-system-x86_64" ]; then
    echo "install-qemu10: the packages hold no usr/bin/qemu-system-x86_64" >&2
    exit 1
fi
cat > "$PREFIX.new/bin/qemu-system-x86_64" <<EOF
#!/bin/sh
# QEMU $version from $SUITE, unpacked by scripts/install-qemu10.sh: its own
# firmware and modules first, Debian 12's firmware directory after.
QEMU_MODULE_DIR=$PREFIX/usr/lib/x86_64-linux-gnu/qemu
export QEMU_MODULE_DIR
exec $PREFIX/usr/bin/qemu-system-x86_64 -L $PREFIX/usr/share/qemu -L /usr/share/qemu "\$@"
EOF
chmod 755 "$PREFIX.new/bin/qemu-system-x86_64"
rm -rf "$PREFIX"
mv "$PREFIX.new" "$PREFIX"
if ! "$WRAPPER" --version | grep -q "version 10\.0\."; then
    echo "install-qemu10: $WRAPPER does not run:" >&2
    "$WRAPPER" --version >&2 || true
    exit 1
fi
echo "install-qemu10: $("$WRAPPER" --version | head -n 1) in $PREFIX"
