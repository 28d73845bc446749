#!/bin/sh
# Builds the base sandbox root filesystem as a tarball for `docker import`.
# Usage: build-rootfs.sh SUITE MIRROR KEYRING OUT.tar   (run as root; stack/images.ts calls it)
set -eu

suite=$1 mirror=$2 keyring=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
packages=$(grep -v '^[[:space:]]*\(#\|$\)' "$here/packages.txt" | tr -s '[:space:]' ',' | sed 's/^,//; s/,$//')

rootfs=$(mktemp -d "${out}.rootfs.XXXXXX")
# --one-file-system: never follow a mount debootstrap may have left inside the target (/proc, a bound /dev).
trap 'rm -rf --one-file-system "$rootfs"' EXIT

debootstrap --variant=minbase --keyring="$keyring" --include="$packages" "$suite" "$rootfs" "$mirror"

# Sandboxes have no network and never install packages: drop what only apt, humans or locales use.
# Keep the byte-compiled __pycache__ folders: the root is read-only at run time, so pytest would
# otherwise recompile itself on every sandbox start.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs"/var/log/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/lintian "$rootfs"/usr/share/common-licenses

# Numeric owners: the rootfs's uids must not be remapped through the host's /etc/passwd.
tar --numeric-owner --xattrs -C "$rootfs" -cf "$out.partial" .
mv "$out.partial" "$out"
