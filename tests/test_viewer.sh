#!/bin/sh
# The viewer opens a real OpenGL window (under Xvfb, Mesa's software renderer), renders 20
# frames of the galaxy collision and saves the last as a PNG; the picture must have the
# window's size and be far from blank: bodies and the text readout lit, several colours.
# S and M (pressed through --keys) switch engine and method and keep running. --offscreen
# (an EGL pbuffer instead of the window) gives a picture as lit.
# Skips when the viewer, Xvfb or libpng are absent; fails instead when NBODY_REQUIRE_VIEWER=1.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CHECK_REQUIRE=NBODY_REQUIRE_VIEWER
. tests/check.sh

[ -x "$BUILD/viewer" ] || { absent "viewer not built (GLFW/OpenGL missing)"; finish; }
# --help: every option and key, exit 0; without a display: a pointer to xvfb-run and --offscreen
if "$BUILD/viewer" --help >"$tmp/help" 2>&1; then ok; else bad "viewer --help exits $?"; fi
for word in --scenario --n --engine --steps --frames --screenshot --keys --interop --context --offscreen SPACE 'S  ' 'M  ' 'R  ' '+ / -' arrows ESC; do
    grep -q -e "$word" "$tmp/help" && ok || bad "viewer --help does not mention '$word'"
done
env -u DISPLAY -u WAYLAND_DISPLAY "$BUILD/viewer" --frames 1 >"$tmp/nodisplay" 2>&1; rc=$?
[ "$rc" -ne 0 ] && grep -q 'xvfb-run' "$tmp/nodisplay" && grep -q -- '--offscreen' "$tmp/nodisplay" && ok \
    || bad "viewer without a display (exit $rc) does not point to xvfb-run and --offscreen: $(cat "$tmp/nodisplay")"
# a simulation that cannot start says why, before any window opens
"$BUILD/viewer" --n 1 --frames 1 >"$tmp/n1" 2>&1; rc=$?
[ "$rc" -eq 2 ] && grep -q 'scenario collision needs at least 2 bodies' "$tmp/n1" && ok \
    || bad "viewer --n 1 (exit $rc) does not say why it cannot start: $(cat "$tmp/n1")"
"$BUILD/viewer" --n abc --frames 1 >"$tmp/nabc" 2>&1; rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--n 'abc': want a whole number" "$tmp/nabc" && ok || bad "viewer --n abc (exit $rc): $(cat "$tmp/nabc")"
command -v xvfb-run >/dev/null 2>&1 || { absent "xvfb-run not installed"; finish; }
build_png_stats

if xvfb-run -a -s "-screen 0 1024x768x24" timeout 120 "$BUILD/viewer" --scenario collision --n 2000 \
        --frames 20 --screenshot "$tmp/shot.png" >"$tmp/log" 2>&1; then ok
else bad "viewer under Xvfb: $(cat "$tmp/log")"; finish; fi
cat "$tmp/log"
set -- $("$tmp/png_stats" "$tmp/shot.png")
[ "$1" = 960 ] && [ "$2" = 720 ] && ok || bad "screenshot is $1x$2, not 960x720"
total=$((${1:-0} * ${2:-0}))
# 2000 bodies of 2x2 pixels plus the text: at least 2000 lit pixels, and not all of them
[ "${3:-0}" -ge 2000 ] && [ "${3:-0}" -lt "$((total / 2))" ] && ok || bad "screenshot has $3 lit pixels of $total"
# the colour map gives bodies many colours; a blank or one-colour frame has 1 or 2
[ "${4:-0}" -ge 16 ] && ok || bad "screenshot has only $4 distinct colours"
echo "screenshot: $1x$2, $3 lit pixels, $4 colours"

# --offscreen: the same drawing into an EGL pbuffer, no window (how the viewer runs on a GPU
# machine without a display); the picture must be the window's size and as lit
if "$BUILD/viewer" --offscreen --n 2000 --frames 21 --screenshot "$tmp/off.png" >"$tmp/off" 2>&1; then
    set -- $("$tmp/png_stats" "$tmp/off.png")
    [ "$1" = 960 ] && [ "$2" = 720 ] && [ "${3:-0}" -ge 2000 ] && [ "${4:-0}" -ge 16 ] && ok \
        || bad "offscreen screenshot: $1x$2, $3 lit pixels, $4 colours"
    echo "offscreen: $1x$2, $3 lit pixels, $4 colours"
elif grep -q -e 'needs a build with EGL' -e 'cannot make an offscreen' "$tmp/off"; then
    # built without EGL (pkg-config egl) or no EGL device here: a skip, a failure in CI
    absent "viewer --offscreen: $(head -n 1 "$tmp/off")"
else bad "viewer --offscreen: $(cat "$tmp/off")"; fi

# the keys: S cycles the engines this build runs, back to the first, M the methods; what
# this build runs is what `nbody --list` says (the same nbody_create checks)
engines=$("$BUILD/nbody" --list | sed -n 's/^engines: //p')
methods=$("$BUILD/nbody" --list | sed -n 's/^methods: //p')
keys=""; expect=""
for e in $engines; do keys="${keys}S"; done
# engines in the order S visits them: those after block, then those before, then block
after=$(echo $engines | sed 's/.*\bblock\b//'); before=$(echo $engines | sed 's/\bblock\b.*//')
for e in $after $before block; do expect="$expect$e "; done
next_method=$(echo $methods leapfrog | sed 's/.*\bleapfrog\b \([a-z0-9-]*\).*/\1/')
if xvfb-run -a -s "-screen 0 1024x768x24" timeout 120 "$BUILD/viewer" --n 200 --frames $((${#keys} + 3)) --keys "${keys}M" \
        >"$tmp/keys" 2>&1; then ok; else bad "viewer with --keys: $(cat "$tmp/keys")"; fi
grep '^viewer: engine' "$tmp/keys"
seen=$(grep '^viewer: engine' "$tmp/keys" | head -n $(echo $engines | wc -w) | sed 's/^viewer: engine \([^,]*\),.*/\1/' | tr '\n' ' ')
[ "$seen" = "$expect" ] && ok || bad "S visited '$seen', expected '$expect'"
grep -q "^viewer: engine block, method $next_method\$" "$tmp/keys" && ok || bad "M did not switch from leapfrog to $next_method"
finish
