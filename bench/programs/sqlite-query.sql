-- The timed sqlite3 run: sorts, groupings, a join, an index build and
-- string work over the generated database, all in memory (temp store and
-- a large page cache go through malloc).
PRAGMA temp_store = MEMORY;
PRAGMA cache_size = -65536;
CREATE TEMP TABLE sorted AS SELECT * FROM item ORDER BY note, name;
SELECT count(*), sum(length(note)) FROM sorted;
SELECT grp, count(*), avg(price), group_concat(substr(name, 6, 4), ',') IS NOT NULL
FROM item GROUP BY grp ORDER BY 3 DESC LIMIT 3;
SELECT g.label, count(*) FROM item i JOIN grp g ON g.id = i.grp
WHERE i.price > 500 GROUP BY g.label ORDER BY 2 DESC LIMIT 3;
CREATE INDEX temp.sorted_price ON sorted(price, note);
SELECT count(*) FROM sorted WHERE price BETWEEN 100 AND 200;
SELECT count(DISTINCT upper(note) || lower(name)) FROM item;
DELETE FROM sorted WHERE id % 2 = 0;
SELECT count(*) FROM sorted;
