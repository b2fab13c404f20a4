#!/bin/sh
# The phases of one nbody_accelerations call with BLOCK (bench/accel_phases.c), the Linux build
# against the Windows build under Wine, with malloc's blocks and with the allocator that keeps
# freed blocks ("reuse"): which part of a call differs between the two (docs/platforms.md).
# Alternates Linux, Wine for each precision and allocator, ROUNDS times; prints each run's line,
# then a table: per build, the median over the rounds of each phase's best (ms), and the median
# over the rounds of Wine's total / Linux's total (the run just before it).
#     sh bench/wine_phases.sh            N (default 4096), REPS (15), THREADS (2), ROUNDS (5), NOBUILD=1
cd "$(dirname "$0")/.." || exit 1
B=build/wine-phases
N=${N:-4096}; REPS=${REPS:-15}; THREADS=${THREADS:-2}; ROUNDS=${ROUNDS:-5}
FLAGS="-std=c99 -Wall -Wextra -pedantic -Werror -O2 -ffp-contract=off -fopenmp -I."
mkdir -p "$B" || exit 1
[ -n "${NOBUILD:-}" ] || for real in double float; do
    gcc $FLAGS -DNBODY_REAL=$real bench/accel_phases.c -o "$B/linux_$real" -lm || exit 1
    x86_64-w64-mingw32-gcc $FLAGS -static -DNBODY_REAL=$real bench/accel_phases.c -o "$B/windows_$real.exe" -lm || exit 1
done
export WINEPREFIX="$(pwd)/$B/wineprefix" WINEDEBUG=-all
wine wineboot -i >/dev/null 2>&1
: > "$B/runs"
round=0
while [ "$round" -lt "$ROUNDS" ]; do
    round=$((round + 1))
    for real in double float; do
        for alloc in malloc reuse; do
            "./$B/linux_$real" "$N" "$REPS" "$THREADS" "$alloc" | sed "s/^/linux /" >> "$B/runs"
            wine "./$B/windows_$real.exe" "$N" "$REPS" "$THREADS" "$alloc" | tr -d '\r' | sed "s/^/wine /" >> "$B/runs"
        done
    done
done
cat "$B/runs"
echo
# "linux PHASES double avx512 N=4096 threads=2 malloc gap=0ms: best/median ms start 0.011/0.015 ... total 3.4/3.6"
awk '/PHASES/ {
        key = $3 " " $7; os = $1
        if (!(key in seen)) { seen[key] = 1; order[++k] = key }
        for (i = 11; i < NF; i += 2) { split($(i + 1), v, "/"); ph = $i; names[ph] = 1; c = ++cnt[os, key, ph]; val[os, key, ph, c] = v[1] + 0 }
        if (os == "wine") { lt = val["linux", key, "total", cnt["linux", key, "total"]]; if (lt > 0) rat[key, ++nr[key]] = val["wine", key, "total", c] / lt }
    }
    function med(os, key, ph,    n, i, j, t, a) {
        n = cnt[os, key, ph]; for (i = 1; i <= n; ++i) a[i] = val[os, key, ph, i]
        for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function medr(key,    n, i, j, t, a) {
        n = nr[key]; for (i = 1; i <= n; ++i) a[i] = rat[key, i]
        for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        print "| precision, allocator | build | start | alloc | upload | evaluate | download | release | total | Wine / Linux, speed of the call (paired median) |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= k; ++i) for (o = 1; o <= 2; ++o) {
            os = o == 1 ? "linux" : "wine"
            printf "| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n", order[i], os, med(os, order[i], "start"), med(os, order[i], "alloc"),
                   med(os, order[i], "upload"), med(os, order[i], "evaluate"), med(os, order[i], "download"), med(os, order[i], "release"),
                   med(os, order[i], "total"), o == 2 ? sprintf("%.3f", 1 / medr(order[i])) : ""
        }
    }' "$B/runs"
