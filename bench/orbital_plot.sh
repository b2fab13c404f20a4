#!/bin/sh
# orbital_plot.sh - docs/orbital_energy.png: abs(dE/E) against time on log-log axes for
# NBODY_RADAU, NBODY_WHFAST, NBODY_RKF and NBODY_LEAPFROG on the outer solar system, drawn
# by gnuplot from the data files of examples/solar_system.c (one per method).
# Usage: bench/orbital_plot.sh [PREFIX (out/orbital/ss)] [OUTPUT (docs/orbital_energy.png)]
#   PREFIX_<method>.dat are read; any that is missing is made first with
#   build/solar_system --years ${YEARS:-1e6} --rkf-years ${RKF_YEARS:-1e6} (a few minutes).
# make plot-orbital runs it.
set -e
prefix=${1:-out/orbital/ss}
png=${2:-docs/orbital_energy.png}
years=${YEARS:-1e6}
rkf_years=${RKF_YEARS:-$years}
mkdir -p "$(dirname "$prefix")"
for m in radau whfast rkf leapfrog; do
    [ -s "${prefix}_$m.dat" ] || build/solar_system --years "$years" --rkf-years "$rkf_years" --methods "$m" --out "$prefix"
done
# the last line of each file: how far it ran, and its wall time
last() { tail -n 1 "${prefix}_$1.dat" | awk '{ printf "%s: to %.3g yr in %.0f s", m, $1, $5 }' m="$2"; }
gnuplot <<GP
set terminal pngcairo size 900,600 font ",11"
set output "$png"
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
set xrange [1:1e6]
set yrange [1e-17:1e-1]
set xlabel "time (years)"
set ylabel "|dE/E|"
set title "Outer solar system (Sun, Jupiter, Saturn, Uranus, Neptune): relative energy error\n(wall times on a shared 2-core CPU)"
set key right center font ",10"
set grid
plot "${prefix}_leapfrog.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with lines lw 1.5 lc rgb "#999999" title "$(last leapfrog "leapfrog, dt 0.5 yr")", \
     "${prefix}_whfast.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with lines lw 1.5 lc rgb "#1f77b4" title "$(last whfast "WHFast, dt 0.5 yr")", \
     "${prefix}_rkf.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with lines lw 1.5 lc rgb "#2ca02c" title "$(last rkf "RKF 7(8), tol 1e-16, compensated")", \
     "${prefix}_radau.dat" using 1:(\$2 > 0 ? \$2 : 1/0) with lines lw 2 lc rgb "#d62728" title "$(last radau "RADAU (IAS15-class)")", \
     1e-16 * sqrt(x) with lines dt 2 lc rgb "black" title "10^{-16} t^{1/2} (Brouwer's law)"
GP
echo "wrote $png"
