#!/bin/sh
# The Windows build under Wine against the Linux build on the same machine: bench/bench_block.c
# (BLOCK, interactions/s, best of its repetitions) at N = 4096, 8192, 16384, in double and in
# float, built by gcc and by x86_64-w64-mingw32-gcc from the same source with the same flags
# (-O2 -fopenmp; -static for Windows), run alternately Linux, Wine, Linux, Wine, ... so that a
# change in the machine's load falls on both; the best run of each and the median of the runs
# kept (on a shared machine the best is the run that got the longest undisturbed window, the
# median says how much the load moved the rest).
# The last column pairs the runs of one round (Wine's run against the Linux run just before it)
# and takes the median of those ratios: a load that drifts between rounds falls on both sides.
# Then bench/omp_forkjoin.c both ways: what a two-thread parallel region costs apart from its
# work (fork and join; BLOCK's task graph at N = 4096, empty and with work), the part of a short
# evaluation that is the OpenMP runtime's (MinGW's libgomp waits on semaphores, which under
# Wine are wineserver calls: docs/platforms.md), and under Wine the worker set that replaces the
# region in BLOCK's schedule there (rows with no Linux figure).
# Prints markdown tables, Linux and Wine side by side; with an argument, also writes them there.
#     sh bench/wine_vs_linux.sh [bench/results/wine-vs-linux-DATE.md]
# Environment: REPS (bench_block's repetitions, default 7), THREADS (default 2), ROUNDS
# (alternations, default 3), OLD (a commit: its nbody.h is built the same way and run in turn
# with the working tree's, both ways, for before/after figures under the same load), NOBUILD=1
# (run the programs the last run built: build first, time later).
cd "$(dirname "$0")/.." || exit 1
out=${1:-}
B=build/wine-vs-linux
REPS=${REPS:-7}; THREADS=${THREADS:-2}; ROUNDS=${ROUNDS:-3}
mkdir -p "$B" || exit 1
FLAGS="-std=c99 -Wall -Wextra -pedantic -Werror -O2 -ffp-contract=off -fopenmp -I."
versions=new
if [ -n "${OLD:-}" ]; then
    mkdir -p "$B/old" && git show "$OLD:nbody.h" > "$B/old/nbody.h" || exit 1
    versions="old new"
fi
[ -n "${NOBUILD:-}" ] || for v in $versions; do
    inc=.; [ "$v" = old ] && inc="$B/old"
    for real in double float; do
        gcc -I"$inc" $FLAGS -DNBODY_REAL=$real bench/bench_block.c -o "$B/linux_${v}_$real" -lm || exit 1
        x86_64-w64-mingw32-gcc -I"$inc" $FLAGS -static -DNBODY_REAL=$real bench/bench_block.c -o "$B/windows_${v}_$real.exe" -lm || exit 1
    done
done
if [ -z "${NOBUILD:-}" ]; then
    gcc $FLAGS bench/omp_forkjoin.c -o "$B/linux_forkjoin" -lm || exit 1
    x86_64-w64-mingw32-gcc $FLAGS -static bench/omp_forkjoin.c -o "$B/windows_forkjoin.exe" -lm || exit 1
fi
export WINEPREFIX="$(pwd)/$B/wineprefix" WINEDEBUG=-all
wine wineboot -i >/dev/null 2>&1
# lines "BLOCK double avx512 N=4096 threads=2: 1.23e+09 interactions/s" -> "double 4096 avx512 1.23e+09",
# kept in $B/runs as "OS VERSION double 4096 avx512 1.23e+09" (VERSION: old, new)
parse() { tr -d '\r' | awk '/^BLOCK/ { n = $4; sub("N=", "", n); print $2, n, $3, $(NF - 1) }'; }
load=$(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null)
: > "$B/runs"
round=0
while [ "$round" -lt "$ROUNDS" ]; do
    round=$((round + 1))
    for real in double float; do
        for v in $versions; do
            "./$B/linux_${v}_$real" "$REPS" "$THREADS" | parse | sed "s/^/linux $v /" >> "$B/runs"
            wine "./$B/windows_${v}_$real.exe" "$REPS" "$THREADS" | parse | sed "s/^/wine $v /" >> "$B/runs"
        done
    done
done
# lines "REGION empty threads=2: best 1.0 us median 1.2 us" -> "linux empty 1.0 1.2"
"./$B/linux_forkjoin" | tr -d '\r' | awk '/^REGION/ { print "linux", $2, $5, $8 }' > "$B/regions"
wine "./$B/windows_forkjoin.exe" | tr -d '\r' | awk '/^REGION/ { print "wine", $2, $5, $8 }' >> "$B/regions"
regions=$(awk '{ key = $2; if (!(key in seen)) { seen[key] = 1; order[++k] = key } best[$1, key] = $3; med[$1, key] = $4 }
    END {
        print "| two-thread region (bench/omp_forkjoin.c) | Linux best, us | Wine best, us | Linux median, us | Wine median, us |"
        print "|---|---|---|---|---|"
        for (i = 1; i <= k; ++i) printf "| %s | %s | %s | %s | %s |\n", order[i], best["linux", order[i]], best["wine", order[i]], med["linux", order[i]], med["wine", order[i]]
    }' "$B/regions")
table=$(awk -v two="$versions" '
    { key = $2 " " $3 " " $4; if (!(key in seen)) { seen[key] = 1; order[++k] = key }
      lvl[$1, key] = $5; if ($6 + 0 > best[$1, key] + 0) best[$1, key] = $6
      runs[$1, key, ++cnt[$1, key]] = $6 + 0 }
    function median(os, key,    n, i, j, t, a) {
        n = cnt[os, key]
        for (i = 1; i <= n; ++i) a[i] = runs[os, key, i]
        for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function paired(key,    n, i, j, t, a) {   # median of Wine / Linux over the rounds (run i of each)
        n = cnt["wine", key] < cnt["linux", key] ? cnt["wine", key] : cnt["linux", key]
        for (i = 1; i <= n; ++i) a[i] = runs["linux", key, i] > 0 ? runs["wine", key, i] / runs["linux", key, i] : 0
        for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        print "| nbody.h | precision | N | SIMD level (Linux / Wine) | Linux best | Wine best | Wine / Linux, best | Linux median | Wine median | Wine / Linux, median | Wine / Linux, median of the rounds |"
        print "|---|---|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= k; ++i) {
            key = order[i]; split(key, p, " ")
            l = best["linux", key]; w = best["wine", key]; ml = median("linux", key); mw = median("wine", key)
            printf "| %s | %s | %s | %s / %s | %.3g | %.3g | %.3f | %.3g | %.3g | %.3f | %.3f |\n", p[1] == "old" ? "old" : "new", p[2], p[3], lvl["linux", key], lvl["wine", key], l, w,
                   (l > 0 ? w / l : 0), ml, mw, (ml > 0 ? mw / ml : 0), paired(key)
        }
    }' "$B/runs")
head="Machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')
Commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- nbody.h bench/bench_block.c 2>/dev/null || echo ' (modified)') (new)${OLD:+; old: nbody.h of $(git rev-parse --short "$OLD")}
Compilers: $(gcc --version | head -n 1); $(x86_64-w64-mingw32-gcc --version | head -n 1); $(wine --version)
Command: ${OLD:+OLD=$OLD }REPS=$REPS THREADS=$THREADS ROUNDS=$ROUNDS sh bench/wine_vs_linux.sh (bench_block $REPS repetitions, $THREADS threads, $ROUNDS alternating runs each way, best and median; load average before: $load, after: $(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null))"
printf '%s\n\n%s\n\n%s\n' "$head" "$table" "$regions"
if [ -n "$out" ]; then printf '# BLOCK: the Windows build under Wine against the Linux build\n\n%s\n\n%s\n\n%s\n' "$head" "$table" "$regions" > "$out"; fi
