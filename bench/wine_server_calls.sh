#!/bin/sh
# Wineserver requests an evaluation of BLOCK under Wine, counted instead of timed (a count does
# not depend on the machine's load). bench/bench_block.c is built for Windows in float and in
# double; the wineserver runs in the foreground with its request trace (-d1), and each run's
# requests are the request lines the trace gains (not the replies): all of them, the semaphore
# posts (release_semaphore) and the waits (select). Runs of 1 and
# of 41 evaluations at each of N = 4096, 8192, 16384: the difference over 120 evaluations is
# the figure an evaluation, apart from the program's start and exit.
#     sh bench/wine_server_calls.sh [threads...]        (default: 1 2)
cd "$(dirname "$0")/.." || exit 1
B=build/wine-server-calls
mkdir -p "$B" || exit 1
FLAGS="-std=c99 -Wall -Wextra -pedantic -Werror -O2 -ffp-contract=off -fopenmp -static -I."
for real in double float; do
    x86_64-w64-mingw32-gcc $FLAGS -DNBODY_REAL=$real bench/bench_block.c -o "$B/$real.exe" -lm || exit 1
done
export WINEPREFIX="$(pwd)/$B/wineprefix" WINEDEBUG=-all
log="$B/server.log"
wine wineboot -i >/dev/null 2>&1
wineserver -k 2>/dev/null; wineserver -w 2>/dev/null
wineserver -f -d1 -p 60 2> "$log" &
sleep 1
counts() { printf '%s %s %s' "$(grep -c '^[0-9a-f]*: [a-z_]*( ' "$log")" "$(grep -c ': release_semaphore( ' "$log")" "$(grep -c ': select( ' "$log")"; }
run() {   # real reps threads -> "requests posts waits" the run added
    set -- "$1" "$2" "$3" $(counts)
    wine "$B/$1.exe" "$2" "$3" > /dev/null; sleep 1
    set -- "$4" "$5" "$6" $(counts)
    echo $(($4 - $1)) $(($5 - $2)) $(($6 - $3))
}
echo "| precision | threads | requests an evaluation | semaphore posts | waits (select) |"
echo "|---|---|---|---|---|"
for threads in ${*:-1 2}; do
    for real in float double; do
        run "$real" 1 "$threads" > /dev/null          # a first run warms the prefix
        one=$(run "$real" 1 "$threads"); many=$(run "$real" 41 "$threads")
        echo "$one $many" | awk -v r="$real" -v t="$threads" '{ printf "| %s | %s | %.1f | %.1f | %.1f |\n", r, t, ($4 - $1) / 120, ($5 - $2) / 120, ($6 - $3) / 120 }'
    done
done
wineserver -k 2>/dev/null
