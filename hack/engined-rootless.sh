#!/bin/sh
# engined-rootless.sh: engined as an ordinary user (rootless mode), as the reference's
# dockerd-rootless.sh starts dockerd: inside rootlesskit, which makes a user namespace from the
# user's /etc/subuid and /etc/subgid ranges (newuidmap/newgidmap), a network namespace reached
# through slirp4netns, and its port driver for published ports. Arguments go to engined.
#
# Per-user roots unless given: data root $XDG_DATA_HOME/engine (~/.local/share/engine), exec root,
# pidfile and socket under $XDG_RUNTIME_DIR (unix://$XDG_RUNTIME_DIR/engine.sock).
#   ENGINED_ROOTLESS_ROOTLESSKIT_NET=slirp4netns|none, ..._MTU (65520), ..._PORT_DRIVER=builtin|none,
#   ..._DISABLE_HOST_LOOPBACK=true|false (false: the host's 127.0.0.1 is 10.0.2.2 inside)
set -e

fail() {
	echo "engined-rootless.sh: $*" >&2
	exit 1
}

if [ -z "$_ENGINED_ROOTLESS_CHILD" ]; then
	# The parent: check what rootless mode needs, then start rootlesskit around this script.
	[ "$(id -u)" != 0 ] || fail "run me as an ordinary user, not root"
	[ -n "$XDG_RUNTIME_DIR" ] && [ -w "$XDG_RUNTIME_DIR" ] || fail "XDG_RUNTIME_DIR needs to be set to a directory of yours (e.g. /run/user/$(id -u))"
	[ -n "$HOME" ] && [ -d "$HOME" ] || fail "HOME needs to be set and exist"
	command -v rootlesskit >/dev/null 2>&1 || fail "rootlesskit needs to be installed (package rootlesskit)"
	for f in newuidmap newgidmap; do
		command -v "$f" >/dev/null 2>&1 || fail "$f needs to be installed (package uidmap)"
	done
	user="$(id -un)"
	uid="$(id -u)"
	grep -qE "^($user|$uid):" /etc/subuid 2>/dev/null || fail "no subuid range for $user in /etc/subuid (e.g. usermod --add-subuids 100000-165535 $user)"
	grep -qE "^($user|$(id -gn)|$(id -g)):" /etc/subgid 2>/dev/null || fail "no subgid range for $user in /etc/subgid (e.g. usermod --add-subgids 100000-165535 $user)"

	net="${ENGINED_ROOTLESS_ROOTLESSKIT_NET:-slirp4netns}"
	mtu="${ENGINED_ROOTLESS_ROOTLESSKIT_MTU:-65520}"
	port_driver="${ENGINED_ROOTLESS_ROOTLESSKIT_PORT_DRIVER:-builtin}"
	host_loopback=--disable-host-loopback
	[ "${ENGINED_ROOTLESS_ROOTLESSKIT_DISABLE_HOST_LOOPBACK:-true}" = true ] || host_loopback=""
	if [ "$net" = slirp4netns ]; then
		command -v slirp4netns >/dev/null 2>&1 || fail "slirp4netns needs to be installed (package slirp4netns)"
	fi

	_ENGINED_ROOTLESS_CHILD=1
	export _ENGINED_ROOTLESS_CHILD
	# /etc and /run are copied up: the daemon's files there are its own, the host's untouched.
	exec rootlesskit \
		--state-dir="$XDG_RUNTIME_DIR/engined-rootlesskit" \
		--net="$net" --mtu="$mtu" \
		--slirp4netns-sandbox=auto --slirp4netns-seccomp=auto \
		$host_loopback --port-driver="$port_driver" \
		--copy-up=/etc --copy-up=/run \
		--propagation=rslave \
		"$0" "$@"
fi

# The child, root of rootlesskit's user namespace: the copied-up /run holds links to the host's
# entries; the daemon's and its supervisor's must be its own.
[ "$_ENGINED_ROOTLESS_CHILD" = 1 ] || fail "_ENGINED_ROOTLESS_CHILD=$_ENGINED_ROOTLESS_CHILD"
rm -f /run/engine /run/containerd /run/xtables.lock
here="$(cd "$(dirname "$0")" && pwd)"
engined="${ENGINED:-}"
for c in "$here/engined" "$here/../bin/engined"; do
	[ -n "$engined" ] || { [ -x "$c" ] && engined="$c"; }
done
[ -n "$engined" ] || engined="$(command -v engined)" || fail "engined not found beside this script or in PATH"
exec "$engined" --rootless "$@"
