# soak.gp - plot make soak's CSV: gnuplot -e "csv='soak.csv'; out='soak.png'" tests/soak.gp
if (!exists("csv")) csv = 'bench/results/soak.csv'
if (!exists("out")) out = 'bench/results/soak.png'
set terminal pngcairo size 1000,600 noenhanced
set output out
set datafile separator ','
set key autotitle columnhead top left
set xlabel 'seconds'
set ylabel 'RSS (MiB)'
set y2label 'VMAs'
set y2tics
set ytics nomirror
set title 'xpfo soak: long-running processes'
plot csv using 1:($2/1024) with lines lw 2 title 'stress RSS', \
     csv using 1:($4/1024) with lines lw 2 title 'preload stress RSS', \
     csv using 1:3 axes x1y2 with lines dt 2 title 'stress VMAs', \
     csv using 1:5 axes x1y2 with lines dt 2 title 'preload stress VMAs'
