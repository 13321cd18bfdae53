#!/bin/sh
# tests/preload/git.sh - git on xpfo: init, commit a few hundred files in a few
# commits, log, diff, gc, fsck.  Identity and dates are fixed so that commit
# ids are the same with and without xpfo.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
skip_if_slow
need_prog git git

git_workload() {
	export HOME="$PWD" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=xpfo \
		GIT_AUTHOR_EMAIL=xpfo@example.org GIT_COMMITTER_NAME=xpfo \
		GIT_COMMITTER_EMAIL=xpfo@example.org \
		GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
		GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
	$RUN git init -q -b main repo || return 1
	cd repo || return 1
	$RUN git config gc.auto 0
	c=0
	while [ $c -lt 4 ]; do
		# 100 new files per commit (400 in all), and the previous
		# commit's files changed
		awk -v c=$c 'BEGIN {
			for (f = c * 100; f < c * 100 + 100; f++) {
				d = "dir" (f % 7)
				file = d "/file" f ".txt"
				system("mkdir -p " d)
				for (l = 0; l < 40 + f % 30; l++)
					printf "file %d line %d %s\n", f, l,
						substr("the quick brown fox jumps over the lazy dog", 1 + l % 20) > file
				close(file)
				if (c > 0) {
					old = "dir" ((f - 100) % 7) "/file" (f - 100) ".txt"
					printf "changed in commit %d\n", c >> old
					close(old)
				}
			}
		}'
		$RUN git add -A || return 1
		$RUN git commit -q -m "commit $c: 100 new files" || return 1
		c=$((c + 1))
	done
	$RUN git log --stat --format='%H %an %s' | head -c 20000
	$RUN git diff --stat HEAD~3 HEAD | tail -3
	$RUN git ls-files | wc -l
	$RUN git gc -q --aggressive || return 1
	$RUN git count-objects -v | grep -E '^(count|in-pack|packs|garbage)'
	$RUN git fsck --no-progress --strict; echo "fsck exit $?"
	$RUN git log --oneline | wc -l
	$RUN git rev-parse HEAD 'HEAD^{tree}'
}
compare_run git git_workload
finish
