#!/bin/sh
# tests/preload/perl.sh - perl on xpfo: hashes, arrays, strings, regexes, sort.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog perl perl-base

perl_workload() {
	$RUN perl -e '
		use strict; use warnings;
		my %h;
		for my $i (0 .. 299999) { $h{"key$i"} = [ $i, "v" x ($i % 20) ]; }
		my $sum = 0; $sum += $_->[0] for values %h;
		print "hash ", scalar(keys %h), " $sum\n";
		undef %h;
		my @a = map { ($_ * 7919) % 1000003 } 0 .. 499999;
		my @s = sort { $a <=> $b } @a;
		print "sort $s[0] $s[-1] $s[250000]\n";
		my $str = join "", map { "line $_ of text\n" } 0 .. 199999;
		(my $t = $str) =~ s/(\d+)/<$1>/g;
		my $n = () = $t =~ /<\d*7>/g;
		print "str ", length($str), " ", length($t), " $n\n";
		my $big = "z" x (32 << 20); $big .= "end";
		print "big ", length($big), "\n";
		my @words = split /\s+/, $str; my %cnt; $cnt{$_}++ for @words;
		print "words ", scalar(@words), " ", scalar(keys %cnt), "\n";
		printf "%s\n", join ",", map { sprintf "%x", $_ } unpack("N*", pack("N*", 1 .. 10));
	'
}
compare_run perl perl_workload
finish
