# shellcheck shell=bash disable=SC2154  # the caller sets abi, modules_dest, modules_base and modules_hint
# What the two virtual boards' initramfs trees share, sourced by run.sh (this machine's kernel) and arm64/run.sh
# (Debian's arm64 kernel, unpacked): the guest's own files (add_guest_files), and kernel modules with their
# dependencies in load order (add_module). modprobe resolves dependencies from
# modules.dep; modules built into the kernel are skipped; compressed modules are unpacked, since busybox's insmod
# wants plain .ko files. The caller sets, before calling:
#   abi            the kernel release whose modules these are
#   modules_dest   where the .ko files go (the rootfs's /modules)
#   modules_base   modprobe's -d, the root the modules are under ("" for this machine's /lib/modules)
#   modules_hint   what to say when a module is missing
# and defines die and here (board/virtual). The load order ends up in the array `order`.
order=()

add_module_file() { # PATH of a .ko, .ko.xz, .ko.zst or .ko.gz
    local path="$1" name
    name=$(basename "$path")
    name="${name%%.ko*}"
    [[ " ${order[*]-} " == *" $name "* ]] && return 0
    case "$path" in
        *.ko) cp "$path" "$modules_dest/$name.ko" ;;
        *.ko.xz) xz -dc "$path" >"$modules_dest/$name.ko" ;;
        *.ko.zst) zstd -qdc "$path" >"$modules_dest/$name.ko" ;;
        *.ko.gz) gzip -dc "$path" >"$modules_dest/$name.ko" ;;
        *) die "unexpected module file $path" ;;
    esac
    order+=("$name")
}

add_module() { # NAME: the module and everything it depends on
    local listing line base=()
    [ -n "$modules_base" ] && base=(-d "$modules_base")
    listing=$(modprobe "${base[@]}" -C /dev/null -S "$abi" --show-depends "$1" 2>&1) ||
        die "kernel $abi has no module '$1' ($listing); $modules_hint"
    while read -r line; do
        case "$line" in
            "insmod "*) line="${line#insmod }"; add_module_file "${line%% *}" ;;
            "builtin "*) ;;
            *) die "unexpected line from 'modprobe --show-depends $1': $line" ;;
        esac
    done <<<"$listing"
}

add_guest_files() { # ROOTFS SCENARIO_FILE: /init, /guest-lib.sh, /scenario.sh, and the users and groups of the guest
    cp "$here/guest-init.sh" "$1/init"
    chmod 755 "$1/init"
    cp "$here/guest-lib.sh" "$1/guest-lib.sh"
    cp "$2" "$1/scenario.sh"
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$1/etc/passwd"
    printf 'root:x:0:\naudio:x:29:\ninput:x:101:\n' >"$1/etc/group"
}
