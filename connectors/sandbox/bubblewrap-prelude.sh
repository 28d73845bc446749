#!/bin/sh
# Runs as root before bwrap, in a mount namespace of the sandbox's own. Arguments, up to `--`:
#   cgroup FILE          join that cgroup (as root, so cgroup v2's delegation rules allow it)
#   tmpfs DIR OPTIONS    mount a tmpfs with OPTIONS (size=..., nr_inodes=...) on DIR
# then execs what follows `--`. The mounts die with the namespace, so nothing is left to unmount.
# Exit 125 means the prelude itself failed (the sandbox never started).
while [ "$1" != -- ]; do
  case "$1" in
    cgroup) echo $$ > "$2" || exit 125; shift 2 ;;
    tmpfs) mount -t tmpfs -o "$3" trialrun "$2" || exit 125; shift 3 ;;
    *) exit 125 ;;
  esac
done
shift
exec "$@"
