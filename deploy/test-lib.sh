# shellcheck shell=bash
# The checks' vocabulary of deploy/test-install.sh and deploy/deb/test-deb.sh (sourced): each check prints one
# PASS or FAIL line named for the person reading the output, and the script ends with the counts.
passed=0
failed=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
# expect NAME COMMAND...: one check, named for the person reading the output.
expect() {
    local name="$1"
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}
# mode_is PATH MODE: PATH exists as a regular file or directory with exactly MODE (octal, as stat prints it).
mode_is() { [ -e "$1" ] && [ "$(stat -c %a "$1")" = "$2" ]; }
# links_to LINK TARGET: LINK is a symbolic link whose text is TARGET.
links_to() { [ -L "$1" ] && [ "$(readlink "$1")" = "$2" ]; }
