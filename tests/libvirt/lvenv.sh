#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A private libvirtd and virtlogd for the libvirt tests (as root; no system
# service is assumed or touched): every directory libvirt's QEMU driver
# uses as root (/etc/libvirt, /var/lib/libvirt, /run/libvirt,
# /var/log/libvirt, /var/cache/libvirt) is a directory under DIR, bind-
# mounted in a mount namespace of the daemons' own. virsh talks to it with
#   virsh -c "qemu:///system?socket=DIR/run/libvirt-sock"
#
#   lvenv.sh start DIR [HOSTNAME]   HOSTNAME: a UTS namespace of its own
#                                   too, and its own host UUID (a
#                                   migration target: libvirt refuses to
#                                   migrate to the host it runs on); the
#                                   network is the host's, so the source
#                                   reaches it at 127.0.0.1
#   lvenv.sh stop DIR
#
# LVENV_MIGRATE_TLS_DIR=CERTDIR (start): qemu.conf's migrate_tls_x509_cert_dir,
# with migrate_tls_x509_verify = 1, for virsh migrate --tls. libvirt refuses
# to start if the directory does not exist, so make it first. CERTDIR holds
# QEMU's file names for both ends (ca-cert.pem, server-*.pem, client-*.pem):
# a host is the server of its incoming migrations and the client of its
# outgoing ones.
set -eu

cmd=$1
dir=$(realpath -m "$2")

# The pid in file $1, or nothing (a daemon removes its file as it exits).
pid_of() {
    cat "$1" 2>/dev/null || true
}

stop() {
    for p in "$dir"/run/libvirtd.pid "$dir"/run/virtlogd.pid; do
        pid=$(pid_of "$p")
        [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
    # libvirtd kills no domain when it exits: do it, then wait for the daemons.
    for p in "$dir"/run/qemu/*.pid; do
        pid=$(pid_of "$p")
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done
    for i in $(seq 50); do
        alive=
        for p in "$dir"/run/libvirtd.pid "$dir"/run/virtlogd.pid; do
            pid=$(pid_of "$p")
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1
        done
        [ -z "$alive" ] && return 0
        sleep 0.1
    done
    echo "lvenv: the daemons under $dir did not exit" >&2
    return 1
}

case $cmd in
start)
    host=${3:-}
    mkdir -p "$dir"/etc/qemu "$dir"/lib "$dir"/run "$dir"/log "$dir"/cache
    cat > "$dir"/etc/libvirtd.conf <<CONF
log_outputs = "1:file:$dir/log/libvirtd.log"
log_filters = "1:qemu.qemu_monitor_json 1:qemu.qemu_process 1:qemu.qemu_capabilities 3:util 3:rpc 3:event 2:*"
CONF
    cat > "$dir"/etc/qemu.conf <<CONF
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
CONF
    if [ -n "${LVENV_MIGRATE_TLS_DIR:-}" ]; then
        cat >> "$dir"/etc/qemu.conf <<CONF
migrate_tls_x509_cert_dir = "$(realpath "$LVENV_MIGRATE_TLS_DIR")"
migrate_tls_x509_verify = 1
CONF
    fi
    : > "$dir"/etc/virtlogd.conf
    if [ -n "$host" ]; then
        # The migration target: its own host name and host UUID.
        uuid=$(cat /proc/sys/kernel/random/uuid)
        echo "host_uuid = \"$uuid\"" >> "$dir"/etc/libvirtd.conf
        ns="--uts"
    else
        ns=
    fi
    # shellcheck disable=SC2086
    unshare --mount --propagation private $ns sh -eu -c '
        dir=$1 host=$2
        for d in /etc/libvirt /var/lib/libvirt /run/libvirt /var/log/libvirt /var/cache/libvirt; do
            mkdir -p "$d"
        done
        mount --bind "$dir/etc" /etc/libvirt
        mount --bind "$dir/lib" /var/lib/libvirt
        mount --bind "$dir/run" /run/libvirt
        mount --bind "$dir/log" /var/log/libvirt
        mount --bind "$dir/cache" /var/cache/libvirt
        if [ -n "$host" ]; then
            hostname "$host"
        fi
        virtlogd -d -f /etc/libvirt/virtlogd.conf -p "$dir/run/virtlogd.pid"
        libvirtd -d -f /etc/libvirt/libvirtd.conf -p "$dir/run/libvirtd.pid"
    ' lvenv "$dir" "$host"
    for i in $(seq 100); do
        [ -S "$dir"/run/libvirt-sock ] && exit 0
        sleep 0.1
    done
    echo "lvenv: libvirtd did not come up; its log: $dir/log/libvirtd.log" >&2
    tail -5 "$dir"/log/libvirtd.log >&2 || true
    stop || true
    exit 1
    ;;
stop)
    stop
    ;;
*)
    echo "usage: lvenv.sh start|stop DIR [HOSTNAME]" >&2
    exit 2
    ;;
esac
