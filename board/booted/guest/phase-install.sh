# shellcheck shell=bash
# Phase "install" (board/booted/run.sh): a maker installs hush with apt from the board's local repository (no
# network), writes the board's configuration, checks it, and restarts hushd; then the board powers off.
export DEBIAN_FRONTEND=noninteractive
check "no hush before the install" bash -c '! dpkg -s hush'
check "apt reads the local repository (no network)" apt-get update
install_log=/var/log/hush-booted-install.log
t0=$(monotonic_us)
if apt-get install -y hush >"$install_log" 2>&1; then
    pass "apt-get install hush: the package and its dependencies from the local repository"
    figure install_seconds "$(awk -v us=$(($(monotonic_us) - t0)) 'BEGIN { printf "%.1f", us / 1e6 }')"
    grep -E '^(Setting up|Unpacking) ' "$install_log" | sed 's/^/    /'
else
    fail "apt-get install hush"
    tail -30 "$install_log" | sed 's/^/    /'
fi
check "hushd.service is enabled by the package" systemctl is-enabled hushd.service
check "hush-fault-around.service is enabled by the package" systemctl is-enabled hush-fault-around.service
# The package started hushd with its example configuration (a Pi's DAC, absent here): it runs without sound.
wait_for 30 systemctl is-active hushd.service
check "hushd runs after the install, before it is configured" systemctl is-active hushd.service

# The maker's configuration: the virtual board's profile, with a line changed as the example shows.
cat >/etc/hush/hushd.toml <<'TOML'
# This board: the booted virtual board (qemu), hush's virtual profile.
board = "virtual"

[sounds]
# The chime the package installs, when hushd is ready (policy R25).
startup = "/usr/share/hush/sounds/startup.wav"
# The hearing warning the package installs, with each warning on the headphones (policy R30).
hearing_warning = "/usr/share/hush/sounds/hearing-warning.wav"

[capture]
# The microphone: what is played into the loopback's second device is heard here.
pcm = "hw:Loopback,1,1"
TOML
check "hushd check-config accepts the maker's configuration" hushd check-config --config /etc/hush/hushd.toml
check "the people who may use hush join the group hush (alice)" usermod -aG hush alice
check "systemctl restart hushd" systemctl restart hushd
check "hushd is active with the new configuration" systemctl is-active hushd
