#!/bin/sh
# tests/preload/sqlite.sh - sqlite3 on xpfo: create, insert 100k rows in
# transactions, index, query, update/delete, vacuum, integrity check.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog sqlite3 sqlite3

sql_workload() {
	{
		echo "PRAGMA journal_mode=WAL;"
		echo "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, val REAL, blob BLOB);"
		i=0
		while [ $i -lt 10 ]; do
			lo=$((i * 10000 + 1)); hi=$(((i + 1) * 10000))
			echo "BEGIN;"
			echo "WITH RECURSIVE c(x) AS (SELECT $lo UNION ALL SELECT x + 1 FROM c WHERE x < $hi)"
			echo "  INSERT INTO t SELECT x, 'name-' || x || '-' || substr('abcdefghijklmnopqrstuvwxyz', 1 + x % 26), x % 97, x * 0.25, zeroblob(x % 300) FROM c;"
			echo "COMMIT;"
			i=$((i + 1))
		done
		echo "CREATE INDEX t_grp ON t(grp, val);"
		echo "CREATE INDEX t_name ON t(name);"
		echo "SELECT count(*), sum(grp), sum(length(blob)), total(val) FROM t;"
		echo "SELECT grp, count(*), max(val) FROM t WHERE grp IN (3, 50, 96) GROUP BY grp ORDER BY grp;"
		echo "SELECT name FROM t WHERE name LIKE 'name-7777%' ORDER BY name LIMIT 5;"
		echo "SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.grp < 3 GROUP BY a.grp;"
		echo "BEGIN; UPDATE t SET name = upper(name) WHERE grp = 5; DELETE FROM t WHERE id % 3 = 0; COMMIT;"
		echo "SELECT count(*), sum(length(name)) FROM t;"
		echo "SELECT group_concat(id) FROM (SELECT id FROM t WHERE grp = 5 ORDER BY id DESC LIMIT 10);"
		echo "VACUUM;"
		echo "PRAGMA integrity_check;"
		echo "SELECT count(*) FROM t;"
	} >script.sql
	$RUN sqlite3 test.db <script.sql
	echo "exit $?"
	$RUN sqlite3 test.db "SELECT count(*), min(id), max(id) FROM t WHERE grp = 42;"
}
compare_run sqlite sql_workload
finish
