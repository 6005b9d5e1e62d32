# test/bench/chart.gp: the charts of test/bench/run.sh, drawn from the TSV
# files it leaves in the results directory:
#   throughput.png  scenario 1: rows/s of each method relative to one plain DELETE
#   lag.png         scenario 2: expiry lag under steady inserts, and
#                   scenario 3: worst small-table lag while a backlog drains
# Usage: gnuplot -e "dir='RESULTS_DIR'; s1n='2,400,000'" test/bench/chart.gp
# (s1n, optional: the backlog of scenario 1, for its title)

has(f) = system("test -s '" . dir . "/" . f . "' && echo 1 || echo 0") eq "1"

set datafile separator "\t"
set encoding utf8

if (has("s1_throughput.tsv")) {
	set terminal pngcairo size 1200,480 font "sans,10"
	set output dir . "/throughput.png"
	set title "1. Draining a backlog" . (exists("s1n") ? " of " . s1n . " expired rows" : "") . ": speed relative to one plain DELETE (higher is faster)"
	set style data boxes
	set style fill solid 0.6 border -1
	set boxwidth 0.6
	stats dir . "/s1_throughput.tsv" skip 1 using 5 nooutput
	set yrange [0:STATS_max * 1.3]
	set ylabel "rows/s relative to plain DELETE"
	set grid ytics
	set key off
	set xtics noenhanced
	plot dir . "/s1_throughput.tsv" skip 1 using 0:5:xtic(7) lc rgb "#4477aa", \
	     "" skip 1 using 0:5:(sprintf("%.2fx\n%.0fk rows/s", $5, $4 / 1000)) with labels offset 0,1.6 font "sans,9"
	unset output
	reset
	set datafile separator "\t"
}

h2 = has("s2_lag.tsv")
h3 = has("s3_lag_max.tsv")
if (h2 || h3) {
	set terminal pngcairo size 900, (h2 && h3) ? 760 : 400 font "sans,10"
	set output dir . "/lag.png"
	if (h2 && h3) { set multiplot layout 2,1 }
	set grid
	set xlabel "seconds"
	set ylabel "age of the oldest expired row (s)"
	set autoscale xfix
	set key top left opaque
	if (h2) {
		stats dir . "/s2_lag.tsv" skip 1 using 2 nooutput
		set yrange [0:(STATS_max * 1.15 > 2.4 ? STATS_max * 1.15 : 2.4)]
		set title "2. Expiry lag, steady inserts of about 5,000 rows/s expiring 1-4 s later (sampled every 200 ms)"
		plot dir . "/s2_lag.tsv" skip 1 using 1:2 with lines lw 1.5 lc rgb "#4477aa" title "lag", \
		     1 with lines dt 2 lc rgb "#ee6677" title "p99 target (1 s)", \
		     2 with lines dt 3 lc rgb "#aa3377" title "max target (2 s)"
	}
	if (h3) {
		stats dir . "/s3_lag_max.tsv" skip 1 using 2 nooutput
		set yrange [0:(STATS_max * 1.15 > 2.9 ? STATS_max * 1.15 : 2.9)]
		set arrow 1 from 2, graph 0 to 2, graph 1 nohead dt 3 lc rgb "#666666"
		set label 1 "first small rows expire" at 2, graph 0.5 left offset 0.5,0 font "sans,9"
		set title "3. Fairness: worst of 20 small tables while the big backlog drains"
		set y2label "backlog rows deleted (millions)"
		set y2tics
		set y2range [0:*]
		plot dir . "/s3_lag_max.tsv" skip 1 using 1:2 with lines lw 1.5 lc rgb "#228833" title "worst small-table lag", \
		     2.5 with lines dt 2 lc rgb "#ee6677" title "max target (2.5 s)", \
		     "" skip 1 using 1:($3 / 1e6) axes x1y2 with lines lc rgb "#bbbbbb" title "backlog deleted"
	}
	if (h2 && h3) { unset multiplot }
	unset output
}
