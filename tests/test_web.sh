#!/bin/sh
# The browser demo (make web: build/web/index.html + galaxies.js/.wasm) in headless Chromium,
# served from 127.0.0.1 by tests/web_server.py: the page loads, runs nbody.h's BLOCK engine at
# the simd128 level, frames advance and steps/s are reported back in real time (?report=1), and
# a screenshot shows the galaxies (thousands of lit pixels, from tests/png_stats.c). Prints the
# steps per second with 2000 bodies. Skips when the build, chromium, python3 or libpng are
# absent; fails instead when NBODY_REQUIRE_WEB=1.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CHECK_REQUIRE=NBODY_REQUIRE_WEB
. tests/check.sh
server=
check_at_exit() { [ -n "$server" ] && kill "$server" 2>/dev/null; }

[ -f "$BUILD/web/index.html" ] && [ -f "$BUILD/web/galaxies.wasm" ] || { absent "$BUILD/web not built (make web: emscripten)"; finish; }
CHROME=${CHROME:-$(command -v chromium || command -v chromium-browser || command -v google-chrome)}
[ -n "$CHROME" ] || { absent "chromium not installed"; finish; }
command -v python3 >/dev/null 2>&1 || { absent "python3 not installed"; finish; }
build_png_stats

python3 tests/web_server.py "$BUILD/web" "$tmp/port" "$tmp/report" & server=$!
i=0; while [ ! -s "$tmp/port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/port" ] || { bad "web_server.py did not start"; finish; }
url="http://127.0.0.1:$(cat "$tmp/port")/index.html"
flags="--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=$tmp/profile --window-size=840,700"

# frames in real time: the page reports after 4 s of animation
"$CHROME" $flags --remote-debugging-port=0 "$url?report=1" >"$tmp/chrome.log" 2>&1 & chrome=$!
i=0; while [ ! -s "$tmp/report" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill "$chrome" 2>/dev/null; wait "$chrome" 2>/dev/null
if [ -s "$tmp/report" ]; then
    ok; rep=$(cat "$tmp/report"); echo "page report: $rep"
    frames=0; steps=0; seconds=1; bodies=0; simd=
    for kv in $rep; do case $kv in frames=*|steps=*|seconds=*|bodies=*|simd=*) eval "${kv%%=*}=\${kv#*=}";; esac; done
    [ "$bodies" = 2000 ] && ok || bad "the page runs $bodies bodies, not 2000"
    [ "$simd" = simd128 ] && ok || bad "the page runs SIMD level '$simd', not simd128"
    [ "$frames" -ge 10 ] && ok || bad "only $frames frames in $seconds s"
    echo "2000 bodies: $(awk -v s="$steps" -v t="$seconds" 'BEGIN { printf "%.0f", s / t }') steps/s, $frames frames in $seconds s"
else
    bad "the page sent no report within 30 s (chromium: $(tail -n 3 "$tmp/chrome.log"))"
fi

# a picture: the galaxies are drawn (lit pixels), the figures are in the page
"$CHROME" $flags --virtual-time-budget=3000 --screenshot="$tmp/shot.png" "$url" >"$tmp/shot.log" 2>&1
if [ -s "$tmp/shot.png" ]; then
    set -- $("$tmp/png_stats" "$tmp/shot.png")
    [ "${3:-0}" -ge 4000 ] && ok || bad "screenshot: only ${3:-0} lit pixels (the galaxies are missing)"
    echo "screenshot ${1}x${2}: ${3} lit pixels, ${4} colours"
    [ -n "$WEB_SCREENSHOT" ] && cp "$tmp/shot.png" "$WEB_SCREENSHOT"
else
    bad "no screenshot ($(tail -n 3 "$tmp/shot.log"))"
fi
finish
