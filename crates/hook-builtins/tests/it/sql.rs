use hook_builtins::{SqlClass, SqlDialect, classify_sql, classify_sql_for};

#[track_caller]
fn check_read(sql: &str) {
    assert_eq!(classify_sql(sql), SqlClass::Read, "expected a read: {sql}");
}

#[track_caller]
fn check_write(sql: &str) {
    assert!(classify_sql(sql).is_write(), "expected a write: {sql}");
}

#[test]
fn pure_reads_pass() {
    for sql in [
        "SELECT 1",
        "select * from orders where id = 1",
        "SELECT id, amount FROM orders WHERE amount > 100 ORDER BY id LIMIT 10",
        "  SELECT\n\t count(*)   FROM   orders ;  ",
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
        "SELECT * FROM orders WHERE id = $1",
        "WITH big AS (SELECT * FROM orders WHERE amount > 1000) SELECT count(*) FROM big",
        "SELECT status, sum(amount) FROM orders GROUP BY status HAVING sum(amount) > 10",
        "SELECT * FROM a UNION SELECT * FROM b",
        "SELECT lower(name), upper(name), coalesce(note, '') FROM customers",
        "SELECT id FROM orders WHERE id IN (SELECT order_id FROM lines)",
        "SELECT 1; SELECT 2",
        "-- a comment\nSELECT 1",
        "/* block */ SELECT 1",
        "SELECT row_number() OVER (ORDER BY id) FROM orders",
        "VALUES (1), (2)",
        "EXPLAIN SELECT * FROM orders",
        "PRAGMA table_info('orders')",
        "PRAGMA integrity_check",
        "PRAGMA user_version",
        "SHOW search_path",
        "SELECT CAST(amount AS TEXT) FROM orders",
        "SELECT now()",
        "SELECT date('now')",
        "SELECT json_extract(data, '$.a') FROM events",
        "SELECT COUNT(DISTINCT customer_id) FROM orders",
        "SELECT * FROM orders LIMIT 10 OFFSET 5",
        "SELECT CASE WHEN amount > 10 THEN 'big' ELSE 'small' END FROM orders",
        "SELECT EXTRACT(YEAR FROM created_at) FROM orders",
        "SELECT amount::text FROM orders",
        "SELECT * FROM orders WHERE name LIKE 'a%' AND id BETWEEN 1 AND 5",
        "SELECT * FROM orders o LEFT JOIN lines l USING (id)",
        "SELECT * FROM generate_series(1, 10)",
        "select * from orders;",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
        "SELECT 'DELETE FROM orders' AS text",
        "SELECT \"delete\" FROM t",
    ] {
        check_read(sql);
    }
}

#[test]
fn dml_ddl_and_admin_statements_are_writes() {
    for sql in [
        "INSERT INTO orders (id) VALUES (1)",
        "UPDATE orders SET amount = 0",
        "DELETE FROM orders",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "REPLACE INTO orders (id) VALUES (1)",
        "INSERT OR REPLACE INTO orders (id) VALUES (1)",
        "UPSERT INTO orders (id) VALUES (1)",
        "CREATE TABLE x (id int)",
        "CREATE TEMP TABLE x AS SELECT 1",
        "CREATE INDEX i ON orders (id)",
        "CREATE VIEW v AS SELECT 1",
        "DROP TABLE orders",
        "ALTER TABLE orders ADD COLUMN x int",
        "TRUNCATE orders",
        "GRANT ALL ON orders TO bob",
        "REVOKE ALL ON orders FROM bob",
        "COPY orders FROM '/tmp/x.csv'",
        "COPY orders TO '/tmp/x.csv'",
        "COPY (SELECT * FROM orders) TO '/tmp/x.csv'",
        "ATTACH DATABASE '/tmp/evil.db' AS evil",
        "ATTACH '/tmp/evil.db' AS evil",
        "DETACH DATABASE evil",
        "VACUUM",
        "VACUUM INTO '/tmp/copy.db'",
        "ANALYZE orders",
        "REINDEX orders",
        "CALL do_things()",
        "EXECUTE stmt",
        "PREPARE stmt AS DELETE FROM orders",
        "DO $$ BEGIN DELETE FROM orders; END $$",
        "SET search_path = evil",
        "SET TRANSACTION READ WRITE",
        "RESET ALL",
        "LOCK TABLE orders",
        "LISTEN ch",
        "NOTIFY ch",
        "DISCARD ALL",
        "DECLARE c CURSOR FOR SELECT 1",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT s",
        "REFRESH MATERIALIZED VIEW mv",
        "COMMENT ON TABLE orders IS 'x'",
        "SECURITY LABEL ON TABLE orders IS 'x'",
        "CLUSTER orders",
        "CHECKPOINT",
        "LOAD 'evil'",
        "ALTER SYSTEM SET fsync = off",
    ] {
        check_write(sql);
    }
}

#[test]
fn stacking_comments_and_transactions_around_writes_are_writes() {
    for sql in [
        "SELECT 1; DELETE FROM orders",
        "SELECT 1;DELETE FROM orders",
        "SELECT 1; -- harmless\nDELETE FROM orders",
        "SELECT 1 /* ; */; DROP TABLE orders",
        "/* SELECT */ DELETE FROM orders",
        "-- SELECT 1\nDELETE FROM orders",
        "BEGIN; INSERT INTO orders (id) VALUES (1); COMMIT;",
        "BEGIN TRANSACTION; UPDATE orders SET amount = 0; ROLLBACK",
        "START TRANSACTION; DELETE FROM orders; COMMIT",
        "SELECT 1; SELECT 2; UPDATE orders SET amount = 1",
        "/* /* nested */ DELETE FROM orders; */ SELECT 1",
        "SELECT 1 -- \n; DELETE FROM orders",
    ] {
        check_write(sql);
    }
}

#[test]
fn case_and_whitespace_tricks_are_writes() {
    for sql in [
        "delete from orders",
        "DeLeTe FrOm orders",
        "\n\t  UPDATE\norders\tSET amount=0",
        "iNsErT/**/InTo orders(id)VALUES(1)",
        "(SELECT 1); DELETE FROM orders",
        "\u{feff}DELETE FROM orders",
    ] {
        check_write(sql);
    }
}

#[test]
fn reads_with_hidden_writes_are_writes() {
    for sql in [
        // Data-modifying CTEs.
        "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
        "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT count(*) FROM u",
        "WITH i AS (INSERT INTO orders (id) VALUES (1) RETURNING id) SELECT * FROM i",
        "WITH a AS (SELECT 1), d AS (DELETE FROM orders RETURNING 1) SELECT * FROM a",
        "WITH RECURSIVE r AS (SELECT 1) INSERT INTO orders SELECT * FROM r",
        // SELECT … INTO creates a table.
        "SELECT * INTO backup FROM orders",
        "SELECT id INTO TEMP t FROM orders",
        "SELECT * INTO backup FROM orders UNION SELECT * FROM archive",
        // Row locks.
        "SELECT * FROM orders FOR UPDATE",
        "SELECT * FROM orders FOR SHARE",
        "SELECT * FROM orders WHERE id = 1 FOR NO KEY UPDATE NOWAIT",
        "SELECT * FROM (SELECT * FROM orders FOR UPDATE) t",
        // Functions with side effects.
        "SELECT pg_sleep(10)",
        "SELECT nextval('orders_id_seq')",
        "SELECT setval('orders_id_seq', 1)",
        "SELECT lo_import('/etc/passwd')",
        "SELECT lo_export(1, '/tmp/x')",
        "SELECT pg_terminate_backend(123)",
        "SELECT pg_cancel_backend(123)",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT pg_catalog.set_config('a', 'b', false)",
        "SELECT dblink_exec('dbname=x', 'DELETE FROM orders')",
        "SELECT * FROM dblink('dbname=x', 'DELETE FROM orders RETURNING 1') AS t(x int)",
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_reload_conf()",
        "SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, true, '')",
        "SELECT load_extension('evil.so')",
        "SELECT writefile('/tmp/x', 'data')",
        "SELECT my_custom_function(1)",
        "SELECT public.lower(name) FROM customers",
        "SELECT id FROM orders WHERE id = nextval('s')",
        "SELECT * FROM orders WHERE EXISTS (SELECT pg_sleep(1))",
        "SELECT PG_SLEEP(1)",
        "SELECT \"pg_sleep\"(1)",
        // EXPLAIN ANALYZE executes the statement.
        "EXPLAIN ANALYZE DELETE FROM orders",
        "EXPLAIN ANALYZE UPDATE orders SET amount = 0",
        "EXPLAIN (ANALYZE) INSERT INTO orders (id) VALUES (1)",
        "EXPLAIN DELETE FROM orders",
        "EXPLAIN ANALYZE SELECT pg_sleep(1)",
        "SELECT 1 UNION ALL SELECT nextval('s')",
        "SELECT txid_current()",
        "SELECT lo_unlink(1)",
        "SELECT pg_read_file('/etc/passwd')",
        "INSERT INTO archive SELECT * FROM orders",
        "CREATE TABLE copy AS SELECT * FROM orders",
        "SELECT * FROM orders WHERE id IN (SELECT setval('s', 1))",
        "SELECT (SELECT nextval('s'))",
        "SELECT * FROM orders ORDER BY nextval('s')",
    ] {
        check_write(sql);
    }
}

#[test]
fn pragma_writes_and_unknown_pragmas_are_writes() {
    for sql in [
        "PRAGMA journal_mode = DELETE",
        "PRAGMA journal_mode=OFF",
        "PRAGMA foreign_keys = OFF",
        "PRAGMA writable_schema = 1",
        "PRAGMA user_version = 7",
        "PRAGMA journal_mode(WAL)",
        "PRAGMA main.journal_mode = WAL",
        "PRAGMA optimize",
        "PRAGMA wal_checkpoint(TRUNCATE)",
        "PRAGMA incremental_vacuum(10)",
        "PRAGMA shrink_memory",
        "PRAGMA some_future_pragma",
    ] {
        check_write(sql);
    }
}

#[test]
fn unparseable_and_empty_input_is_a_write() {
    for sql in ["", "   ", ";", "SELEC 1", "SELECT FROM WHERE", "DELETE", "\0", "SELECT 'unterminated"] {
        check_write(sql);
    }
    match classify_sql("SELEC 1") {
        SqlClass::Write { reason } => assert!(reason.contains("unparseable"), "{reason}"),
        SqlClass::Read => unreachable!(),
    }
}

#[test]
fn dialect_specific_syntax_needs_the_dialect() {
    // SQLite placeholders do not parse as PostgreSQL: unknown dialect ⇒ write, SQLite ⇒ read.
    let sql = "SELECT * FROM orders WHERE id = ?";
    assert!(classify_sql(sql).is_write());
    assert_eq!(classify_sql_for(sql, SqlDialect::Sqlite), SqlClass::Read);
    assert_eq!(classify_sql_for("SELECT * FROM orders WHERE id = $1", SqlDialect::Postgresql), SqlClass::Read);
    for sql in ["PRAGMA table_info(orders)", "PRAGMA index_list(orders)", "PRAGMA foreign_key_list(orders)"] {
        assert_eq!(classify_sql_for(sql, SqlDialect::Sqlite), SqlClass::Read, "{sql}");
    }
    // A nested comment hides a DELETE from PostgreSQL but not from SQLite.
    let nested = "/* /* nested */ DELETE FROM orders; */ SELECT 1";
    assert!(classify_sql_for(nested, SqlDialect::Sqlite).is_write());
    assert!(classify_sql(nested).is_write());
    for sql in ["DELETE FROM orders", "SELECT 1; DELETE FROM orders", "PRAGMA journal_mode = WAL", "VACUUM INTO 'x'"] {
        assert!(classify_sql_for(sql, SqlDialect::Sqlite).is_write(), "{sql}");
    }
    for sql in ["DELETE FROM orders", "SELECT nextval('s')", "COPY t FROM STDIN", "SELECT * FROM t FOR UPDATE"] {
        assert!(classify_sql_for(sql, SqlDialect::Postgresql).is_write(), "{sql}");
    }
}
