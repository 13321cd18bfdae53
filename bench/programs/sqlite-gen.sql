-- Generates the benchmark database (untimed, run once under glibc).
-- @ROWS@ is replaced by the runner.
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE item(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, price REAL, note TEXT);
CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @ROWS@)
INSERT INTO item
SELECT i, abs(random()) % 1000, 'item-' || hex(randomblob(6)),
       (abs(random()) % 100000) / 100.0, substr(hex(randomblob(40)), 1, 20 + i % 60)
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
INSERT INTO grp SELECT i, 'group ' || i FROM n;
