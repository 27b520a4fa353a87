# SPDX-License-Identifier: GPL-2.0-or-later
# examples/demo/gpus.gp: the demo's chart: per job, the GPUs it holds over
# time (filled) and the ranks training on them (line), with its resizes, the
# failures and the demo's actions marked.
# usage: gnuplot -e "datadir='DIR'; outfile='FILE.png'" gpus.gp
# DIR holds chart.dat (t gpus1 gpus2 ranks1 ranks2) and chart-marks.dat
# (t y kind "label"; kind resize1, resize2, failure1, failure2, action).
if (!exists("datadir")) datadir = "."
if (!exists("outfile")) outfile = datadir . "/gpus.png"
set terminal pngcairo size 1200,720 font "DejaVu Sans,11" noenhanced
set output outfile
d = datadir . "/chart.dat"
m = datadir . "/chart-marks.dat"
stats d using 1 nooutput
tmax = STATS_max
set xrange [0:tmax]
set yrange [0:10.2]
set ytics 0,2,8
set mytics 2
set grid ytics mytics lc rgb "#e4e4e4"
set key outside right top vertical samplen 2
set style fill solid 0.45 noborder
set lmargin 8; set rmargin 24
set multiplot layout 2,1 title "slurm-elastic demo: GPUs per job over time (2 nodes x 4 GPUs)" font ",13"
do for [j = 1:2] {
	col = j == 1 ? "#3b75af" : "#ef8636"
	dark = j == 1 ? "#1f3d5c" : "#8a4410"
	set ylabel sprintf("job %d: GPUs", j)
	if (j == 2) { set xlabel "seconds since the demo started" } else { unset xlabel }
	plot d using 1:(column(1 + j)) with fillsteps lc rgb col title "GPUs held", \
	     d using 1:(column(3 + j)) with steps lw 2.5 lc rgb dark title "ranks training", \
	     m using 1:(strcol(3) eq sprintf("resize%d", j) ? $2 : 1/0) with points pt 7 ps 1.1 lc rgb dark title "resize in force", \
	     m using 1:(strcol(3) eq sprintf("failure%d", j) ? $2 : 1/0) with points pt 2 ps 3 lw 3 lc rgb "#d62728" title "failure", \
	     m using 1:(strcol(3) eq sprintf("failure%d", j) ? $2 + 0.9 : 1/0):4 with labels tc rgb "#d62728" font ",10" notitle, \
	     m using 1:(strcol(3) eq "action" ? 0 : 1/0):(0):(10.2) with vectors nohead dt 3 lc rgb "#777777" title "demo action", \
	     m using 1:(strcol(3) eq "action" ? $2 : 1/0):4 with labels left offset 0.3,0 font ",9" notitle
}
unset multiplot
