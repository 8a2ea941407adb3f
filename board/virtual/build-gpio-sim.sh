#!/usr/bin/env bash
# Builds gpio-sim (with irq_sim, which Debian's kernel also lacks) out of tree for the kernel the virtual board
# boots, and caches the module under .build/virtual-board/. Called by setup.sh.
#
# Debian's 6.1 kernel ships neither CONFIG_GPIO_SIM nor CONFIG_IRQ_SIM. We compile drivers/gpio/gpio-sim.c and
# kernel/irq/irq_sim.c from Debian's linux-source into one module, hush-gpio-sim.ko. irq_sim.c calls
# irq_to_desc(), which this kernel does not export; generic_handle_irq(irqnum) does the same job there.
set -euo pipefail

abi="${1:?usage: build-gpio-sim.sh KERNEL_ABI (e.g. 6.1.0-56-amd64) OUT_DIR}"
out="${2:?usage: build-gpio-sim.sh KERNEL_ABI OUT_DIR}"
headers="/usr/src/linux-headers-$abi"
tarball="/usr/src/linux-source-6.1.tar.xz"

[ -d "$headers" ] || { echo "build-gpio-sim: no kernel headers at $headers (install linux-headers-$abi)" >&2; exit 1; }
[ -f "$tarball" ] || { echo "build-gpio-sim: no $tarball (install linux-source-6.1)" >&2; exit 1; }

src="$out/src"
rm -rf "$src"
mkdir -p "$src"
# Only the three files we need, not the whole tree.
tar -xJf "$tarball" -C "$src" --strip-components=1 --wildcards \
    '*/drivers/gpio/gpio-sim.c' '*/drivers/gpio/gpiolib.h' '*/kernel/irq/irq_sim.c'
mv "$src/drivers/gpio/gpio-sim.c" "$src/drivers/gpio/gpiolib.h" "$src/kernel/irq/irq_sim.c" "$src/"
rm -rf "$src/drivers" "$src/kernel"

# irq_sim.c: replace the unexported irq_to_desc() round trip with generic_handle_irq().
python3 - "$src/irq_sim.c" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = "handle_simple_irq(irq_to_desc(irqnum));"
if text.count(old) != 1:
    sys.exit("build-gpio-sim: irq_sim.c no longer has the irq_to_desc() call this patch expects")
open(path, "w").write(text.replace(old, "generic_handle_irq(irqnum);"))
PY

cat > "$src/Makefile" <<'MK'
obj-m := hush-gpio-sim.o
hush-gpio-sim-objs := gpio-sim.o irq_sim.o
MK

make -s -C "$headers" M="$src" modules >"$out/build.log" 2>&1 || {
    echo "build-gpio-sim: the module did not build; the compiler said:" >&2
    tail -30 "$out/build.log" >&2
    exit 1
}
cp "$src/hush-gpio-sim.ko" "$out/hush-gpio-sim.ko"
echo "$abi" >"$out/hush-gpio-sim.abi"
echo "built $out/hush-gpio-sim.ko for $abi"
