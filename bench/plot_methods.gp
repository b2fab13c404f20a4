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
set grid
methods = "euler midpoint leapfrog trapeze rk4 rkck rkdp rkdverk rkf rkgl rklc adams1 adams2 adams3 adams4 adams5 bs rkck-adaptive rkdp-adaptive rkdverk-adaptive rkf-adaptive rklc-adaptive bs-adaptive"
set title "a) |dE/E|"
set ylabel "relative energy change"
plot for [m in methods] "< grep '^".m.",' bench/results/methods.csv" using 6:($9 > 0 ? $9 : 1e-17) with linespoints pt 7 ps 0.6 title m
set title "b) |dP| / sum |m v|"
set ylabel "relative momentum change"
plot for [m in methods] "< grep '^".m.",' bench/results/methods.csv" using 6:($10 > 0 ? $10 : 1e-17) with linespoints pt 7 ps 0.6 title m
unset multiplot
