# gnuplot bench/plot_methods.gp  ->  bench/results/methods.png (the article's Figure 2)
set datafile separator ","
set terminal pngcairo size 1500,600 font ",10"
set output "bench/results/methods.png"
set multiplot layout 1,2 title "Two-galaxy collision: relative change at the end vs force evaluations (double)"
set logscale xy
set format y "10^{%L}"
set format x "10^{%L}"
set xlabel "force evaluations"
set key outside right font ",8"
# thick: adaptive runs (tolerance 1e-3 .. 1e-10); solid: fixed dt 0.05 / 2^j
set grid
methods = "euler midpoint leapfrog trapeze rk4 rkck rkdp rkdverk rkf rkgl rklc adams1 adams2 adams3 adams4 adams5 bs rkck-adaptive rkdp-adaptive rkdverk-adaptive rkf-adaptive rklc-adaptive bs-adaptive"
set title "a) |dE/E|"
set ylabel "relative energy change"
n = words(methods)
plot for [i=1:n] "< grep '^".word(methods,i).",' bench/results/methods.csv" using 6:($9 > 0 ? $9 : 1e-17) \
     with linespoints lc i pt (i % 13 + 1) ps 0.7 lw (i > 17 ? 2.5 : 1) title word(methods,i)
set title "b) |dP| / sum |m v|"
set ylabel "relative momentum change"
plot for [i=1:n] "< grep '^".word(methods,i).",' bench/results/methods.csv" using 6:($10 > 0 ? $10 : 1e-17) \
     with linespoints lc i pt (i % 13 + 1) ps 0.7 lw (i > 17 ? 2.5 : 1) title word(methods,i)
unset multiplot
