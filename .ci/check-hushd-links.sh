#!/bin/sh
# The board's hushd carries no plotter and no hush-render command line (docs/architecture.md): no symbol of
# HushRenderTool (TimelinePlot, SVGWriter, RenderTool) in the hushd given, while the hush-render beside it has
# them and hushd has the renderer `hushd play` uses (so an unreadable or stripped binary cannot pass).
#   .ci/check-hushd-links.sh BIN_DIR      (make test: the release build's, swift build -c release --show-bin-path)
set -eu
bin="${1:?usage: check-hushd-links.sh BIN_DIR}"
for program in hushd hush-render; do
    [ -x "$bin/$program" ] || { echo "check-hushd-links: $bin/$program is not built" >&2; exit 2; }
done
plotter='TimelinePlot|SVGWriter|14HushRenderTool'
hushd_symbols=$(nm "$bin/hushd")
render_symbols=$(nm "$bin/hush-render")
renderer=$(printf '%s\n' "$hushd_symbols" | grep -c '16ScenarioRenderer' || true)
drawn=$(printf '%s\n' "$render_symbols" | grep -c -E "$plotter" || true)
linked=$(printf '%s\n' "$hushd_symbols" | grep -c -E "$plotter" || true)
if [ "$renderer" -eq 0 ] || [ "$drawn" -eq 0 ]; then
    echo "FAIL nm shows no renderer in hushd ($renderer) or no plotter in hush-render ($drawn): cannot judge"
    exit 1
fi
if [ "$linked" -ne 0 ]; then
    echo "FAIL $bin/hushd links the plotter: $linked symbols, e.g."
    printf '%s\n' "$hushd_symbols" | grep -E "$plotter" | head -5
    exit 1
fi
echo "PASS hushd links no plotter: 0 of hush-render's $drawn plotter symbols, $renderer of the renderer's;" \
    "$(stat -c %s "$bin/hushd") bytes"
