#!/usr/bin/env bash
# Makes the GPU timeline picture (docs/img/timeline.png, shown in docs/logs.md) from a real harness run.
#
#   bash scripts/timeline-screenshot.sh [OUT.png]
#
# 1. `cargo run -p rvgpu-whlk -- --filter Logs.Timeline` writes the trace-event JSON
#    (target/rvgpu-timeline.json) and, with --timeline-svg, the same data drawn as an SVG by
#    rvgpu_whlk::timeline::to_svg (one lane per hardware queue: wait boxes, signal boxes, GPU
#    row; time axis; legend).
# 2. The SVG is rasterised to PNG by the first tool found: Chromium headless
#    (`apt-get install chromium`), rsvg-convert (`librsvg2-bin`), or ImageMagick with its SVG
#    delegate (`imagemagick`).
#
# Why not a screenshot of chrome://tracing or ui.perfetto.dev: Debian's Chromium 156 answers
# chrome://tracing (and chrome://traces) with net::ERR_FAILED here, also after enabling
# internal debugging pages in chrome://chrome-urls, and the Perfetto UI was not reachable from
# the machine the picture was made on. Nothing in CI runs this script.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$root/docs/img/timeline.png"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
cargo run -q -p rvgpu-whlk -- --filter Logs.Timeline \
    --timeline "$work/timeline.json" --timeline-svg "$work/timeline.svg"

svg="$work/timeline.svg"
# The SVG's pixel size from its root element: width="W" height="H".
read -r width height < <(sed -n '1s/.* width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$svg")
mkdir -p "$(dirname "$out")"

chromium_bin=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -n "$chromium_bin" ]]; then
    "$chromium_bin" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$work/profile" --window-size="$width,$height" \
        --screenshot="$out" "file://$svg" >/dev/null 2>&1
elif command -v rsvg-convert >/dev/null; then
    rsvg-convert -o "$out" "$svg"
elif command -v magick >/dev/null; then
    magick "$svg" "$out"
elif [[ -x /usr/bin/convert ]]; then
    /usr/bin/convert "$svg" "$out"
else
    echo "timeline-screenshot: no SVG rasteriser (install chromium, librsvg2-bin or imagemagick)" >&2
    exit 2
fi
echo "wrote $out (${width}x${height}) from $(grep -c '"ph":"b"' "$work/timeline.json") fence boxes"
