# shellcheck shell=bash
# Debian packages for the project's scripts (sourced: `. "$ROOT/scripts/lib/debian.sh"`).
#
#   apt_missing SPEC...    prints, one a line, the SPECs not installed; a SPEC is NAME or
#                          NAME=VERSION (then only that exact version counts as installed)
#   apt_install SPEC...    installs the missing SPECs (pinned versions as given); runs
#                          `apt-get update` first only when a SPEC is not in the package lists
#                          (again when an install fails to fetch with outdated lists)
#   apt_download SPEC...   downloads the SPECs' .deb files into the current directory
#   apt_run ARGS...        `apt-get ARGS` once the package manager's locks are free
#   apt_lock_holder FILE   prints "PID (COMMAND)" of the process holding FILE's fcntl lock
#
# Each returns 0 on success; on failure it prints apt's error lines and returns 1 with the cause
# in $apt_why, one line naming it: the lock still held after the timeout (and by which process),
# a package or version not in Debian's archive, the archive unreachable, not root and no sudo.
# Messages start with the calling script's name.
#
# Another apt or dpkg (unattended-upgrades on a fresh machine, a second script) holds the lock
# files: apt-get install takes dpkg's lock-frontend and lock and the archive cache's lock,
# apt-get update takes the package lists' lock. Before each apt-get these helpers wait until no
# process holds the locks that command takes, saying for which process they wait, at most
# CURTA_APT_LOCK_TIMEOUT seconds (default 600) in all for one call; apt-get itself gets the
# remaining time as -o DPkg::Lock::Timeout (which covers dpkg's locks only).

# shellcheck disable=SC2034 # read by the scripts that source this
apt_why=

_apt_say() { echo "${0##*/}: $*" >&2; }

# Microseconds since the epoch.
_apt_now() { _apt_t=${EPOCHREALTIME/[.,]/}; }

# The dev:inode key /proc/locks gives FILE: the kernel's major and minor, each %02x.
_apt_lock_key() {
    local ino dev
    read -r ino dev < <(stat -L -c '%i %D' -- "$1" 2>/dev/null) || return 1
    dev=$((16#$dev))
    printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino"
}

apt_lock_holder() {
    local key pid comm
    [ -e "$1" ] && [ -r /proc/locks ] || return 0
    key=$(_apt_lock_key "$1") || return 0
    # "1: POSIX ADVISORY WRITE PID MAJ:MIN:INODE START END"; waiters have "->" in field 2.
    pid=$(awk -v key="$key" '($2 == "POSIX" || $2 == "OFDLCK") && $6 == key { print $5; exit }' /proc/locks)
    [ -n "$pid" ] || return 0
    if [ "$pid" = -1 ]; then
        echo "unknown (an open file description lock)"
        return 0
    fi
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || comm=gone
    echo "$pid ($comm)"
}

# Sets the deadline of one call, the lock files, the log and sudo; 1 with apt_why when the
# timeout is not a number.
_apt_begin() {
    local timeout=${CURTA_APT_LOCK_TIMEOUT:-600} status=/var/lib/dpkg/status
    local lists=/var/lib/apt/lists/ archives=/var/cache/apt/archives/
    case $timeout in
    '' | *[!0-9]*)
        apt_why="CURTA_APT_LOCK_TIMEOUT=$timeout is not a whole number of seconds"
        return 1
        ;;
    esac
    _apt_timeout=$((10#$timeout))
    _apt_now
    _apt_deadline=$((_apt_t + _apt_timeout * 1000000))
    # The paths apt is configured with (a test's APT_CONFIG may move the lists and the cache).
    eval "$(apt-config shell status Dir::State::status/f lists Dir::State::Lists/d archives Dir::Cache::Archives/d 2>/dev/null)"
    _apt_dpkg_locks=("${status%/*}/lock-frontend" "${status%/*}/lock" "${archives%/}/lock")
    _apt_lists_lock=${lists%/}/lock
    _apt_log=$(mktemp)
    _apt_net=
    apt_why=
}

_apt_end() { rm -f "$_apt_log"; }

# Sets _apt_sudo for commands that need root; 1 with apt_why when there is neither root nor sudo.
_apt_root() {
    _apt_sudo=
    [ "$(id -u)" = 0 ] && return 0
    if ! command -v sudo >/dev/null; then
        apt_why="$1 needs root: this runs as $(id -un 2>/dev/null || id -u), and there is no sudo (run it as root)"
        return 1
    fi
    _apt_sudo=sudo
}

# Sets apt_why: the lock FILE still held by HOLDER (either may be unknown: empty).
_apt_held() {
    apt_why="the package manager's lock${1:+ $1} is still held${2:+ by process $2} after $_apt_timeout s (another package installation is running: let it finish, or raise CURTA_APT_LOCK_TIMEOUT)"
}

# Waits until no process holds a lock on the FILEs, or the deadline; says for which process it
# waits (again when the holder changes). 1 with apt_why at the deadline.
_apt_wait_free() {
    local said='' file held holder
    while :; do
        holder=
        for file; do
            holder=$(apt_lock_holder "$file")
            [ -z "$holder" ] || { held=$file; break; }
        done
        [ -n "$holder" ] || return 0
        _apt_now
        if [ "$_apt_t" -ge "$_apt_deadline" ]; then
            _apt_held "$held" "$holder"
            return 1
        fi
        if [ "$held $holder" != "$said" ]; then
            _apt_say "waiting for process $holder, which holds the package manager's lock $held (up to $(((_apt_deadline - _apt_t + 999999) / 1000000)) s more; CURTA_APT_LOCK_TIMEOUT=$_apt_timeout)"
            said="$held $holder"
        fi
        sleep 0.5
    done
}

# A lock held by another process (without permission, apt says "Permission denied" instead).
_APT_LOCK_ERROR='Could not get lock|\), is another process using it\?'
_APT_NET_ERROR='Failed to fetch|Temporary failure resolving|Could not resolve|Could not connect|Unable to connect|Connection failed|Connection timed out|Network is unreachable'

# apt-get ARGS with the locks that command takes waited for; its output goes to $_apt_log.
# A lock taken again between the wait and apt-get's start is waited for again.
_apt_run() {
    local locks=() sudo=$_apt_sudo remaining retried=''
    case $1 in
    update) locks=("$_apt_lists_lock") ;;
    install | reinstall | remove | purge | upgrade | dist-upgrade | full-upgrade | autoremove) locks=("${_apt_dpkg_locks[@]}") ;;
    *) sudo= ;;
    esac
    while :; do
        _apt_wait_free "${locks[@]}" || return 1
        _apt_now
        remaining=$(((_apt_deadline - _apt_t) / 1000000))
        [ "$remaining" -ge 0 ] || remaining=0
        $sudo env LC_ALL=C DEBIAN_FRONTEND=noninteractive \
            apt-get -o DPkg::Lock::Timeout="$remaining" "$@" >"$_apt_log" 2>&1 && return 0
        if ! grep -qE "$_APT_LOCK_ERROR" "$_apt_log" || [ "$remaining" -eq 0 ]; then break; fi
        [ -n "$retried" ] || _apt_say "apt-get $1 found a lock taken ($(grep -E "$_APT_LOCK_ERROR" "$_apt_log" | head -n 1)); trying again for up to $remaining s"
        retried=1
        sleep 0.5
    done
    _apt_explain "$@"
    return 1
}

# Sets apt_why from the failed `apt-get ARGS`'s output and prints its error lines.
_apt_explain() {
    local log=$_apt_log holder='' held='' file line
    grep -E '^(E|W): ' "$log" | head -n 12 | sed 's/^/    /' >&2 || true
    line=$(grep -E '^E: ' "$log" | tail -n 1) || true
    [ -n "$line" ] || line=$(tail -n 1 "$log")
    if grep -qE "$_APT_LOCK_ERROR" "$log"; then
        for file in "$_apt_lists_lock" "${_apt_dpkg_locks[@]}"; do
            holder=$(apt_lock_holder "$file")
            [ -z "$holder" ] || { held=$file; break; }
        done
        if [ -z "$holder" ]; then # gone meanwhile: apt's own words
            held=$(grep -oE 'Could not get lock [^ ]+\.' "$log" | head -n 1 | sed 's/^Could not get lock //; s/\.$//') || true
            holder=$(grep -oE 'held by process [0-9]+ \([^)]*\)' "$log" | head -n 1 | sed 's/^held by process //') || true
        fi
        _apt_held "$held" "$holder"
    elif grep -q 'Permission denied' "$log"; then
        apt_why="apt-get $1: no permission (not root?): $(grep -m 1 'Permission denied' "$log")"
    elif grep -q 'dpkg was interrupted' "$log"; then
        apt_why="apt-get $1: an earlier dpkg run was interrupted: run dpkg --configure -a as root, then this again"
    elif grep -qE 'Unable to locate package|has no installation candidate|Version .* was not found|is not available' "$log"; then
        apt_why="apt-get $1: a package is not in Debian's archive: $line"
    elif grep -qE "$_APT_NET_ERROR" "$log"; then
        apt_why="apt-get $1: Debian's archive is unreachable: $(grep -E "$_APT_NET_ERROR" "$log" | head -n 1 | sed 's/^W: //')"
    else
        apt_why="apt-get $*: failed: $line"
    fi
}

# apt-get update; a transient fetch failure is only a warning to apt: kept in _apt_net.
_apt_update() {
    _apt_run update -qq || return 1
    _apt_net=$(grep -E "$_APT_NET_ERROR" "$_apt_log" | head -n 1 | sed 's/^W: //') || true
}

# Prints the SPECs that the package lists do not have.
_apt_unknown() {
    local spec name
    for spec; do
        name=${spec%%=*}
        if [ "$name" = "$spec" ]; then
            apt-cache show --no-all-versions -- "$name" >/dev/null 2>&1 || echo "$spec"
        else
            apt-cache show -- "$name" 2>/dev/null | grep -qxF "Version: ${spec#*=}" || echo "$spec"
        fi
    done
}

# Updates the package lists when they lack a SPEC; 1 with apt_why when they still do.
_apt_lists_have() {
    local unknown spec name have what=''
    mapfile -t unknown < <(_apt_unknown "$@")
    [ ${#unknown[@]} -gt 0 ] || return 0
    _apt_say "updating the package lists (apt-get update): they lack ${unknown[*]}"
    _apt_update || return 1
    mapfile -t unknown < <(_apt_unknown "${unknown[@]}")
    [ ${#unknown[@]} -gt 0 ] || return 0
    for spec in "${unknown[@]}"; do
        name=${spec%%=*}
        if [ "$name" = "$spec" ]; then
            what="$what; no package $name"
        else
            have=$(apt-cache show -- "$name" 2>/dev/null | sed -n 's/^Version: //p' | sort -u | paste -sd ' ') || true
            what="$what; no version ${spec#*=} of $name (versions: ${have:-none})"
        fi
    done
    if [ -n "$_apt_net" ]; then
        apt_why="Debian's archive is unreachable ($_apt_net): the package lists have${what#;}"
    else
        apt_why="not in Debian's archive (its package lists, just updated):${what#;}"
    fi
    return 1
}

apt_missing() {
    local spec name ver found status version
    for spec; do
        name=${spec%%=*} ver='' found=0
        [ "$name" = "$spec" ] || ver=${spec#*=}
        while read -r status version; do
            [ "$status" = installed ] && { [ -z "$ver" ] || [ "$version" = "$ver" ]; } && found=1
        done < <(dpkg-query -W -f='${db:Status-Status} ${Version}\n' -- "$name" 2>/dev/null || true)
        [ "$found" = 1 ] || echo "$spec"
    done
}

apt_install() {
    local missing rc=0
    mapfile -t missing < <(apt_missing "$@")
    [ ${#missing[@]} -gt 0 ] || return 0
    if ! command -v apt-get >/dev/null; then
        apt_why="Debian packages ${missing[*]} are missing and there is no apt-get here to install them"
        return 1
    fi
    _apt_root "installing the missing Debian packages ${missing[*]}" && _apt_begin || return 1
    _apt_say "installing Debian packages: ${missing[*]}"
    if ! _apt_lists_have "${missing[@]}"; then
        rc=1
    elif ! _apt_run install -y -qq --allow-downgrades "${missing[@]}"; then
        # Outdated lists name .deb files the archive no longer has: update once and retry.
        if grep -q 'Failed to fetch.* 404 ' "$_apt_log"; then
            _apt_say "updating the package lists (apt-get update): the archive no longer has the files they name"
            _apt_update && _apt_run install -y -qq --allow-downgrades "${missing[@]}" || rc=1
        else
            rc=1
        fi
    fi
    _apt_end
    return $rc
}

apt_download() {
    command -v apt-get >/dev/null || { apt_why="there is no apt-get here to download Debian's $*"; return 1; }
    _apt_sudo=
    _apt_begin || return 1
    local rc=0
    if [ -n "$(_apt_unknown "$@")" ] && ! { _apt_root "updating the package lists (they lack some of $*)" && _apt_lists_have "$@"; }; then
        rc=1
    elif ! _apt_run download "$@"; then
        rc=1
    fi
    _apt_end
    return $rc
}

apt_run() {
    _apt_sudo=
    case ${1:-} in
    download | source | changelog) ;;
    *) _apt_root "apt-get $1" || return 1 ;;
    esac
    _apt_begin || return 1
    local rc=0
    _apt_run "$@" || rc=1
    _apt_end
    return $rc
}
