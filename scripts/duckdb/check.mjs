// Usage: node check.mjs DECISIONS.parquet
// Prints, as JSON, the row count, the column names and types, and per
// (model, prompt, condition) the sums of every flag and of replays, and of
// the nullable lab columns (lab_n counts the rows that have them; harm
// and each kind of harm, recovered, invalid_action, calls, lab_ms) with the
// label against the action (label_action: strict by recovered), as DuckDB
// reads them. The Go test suite compares this with its own analysis.
import { DuckDBInstance } from '@duckdb/node-api';

const file = process.argv[2];
if (!file) {
  console.error('usage: node check.mjs DECISIONS.parquet');
  process.exit(2);
}
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const src = `read_parquet('${file.replaceAll("'", "''")}')`;
const schema = await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`);
const cells = await con.runAndReadAll(`
  SELECT model, prompt, condition,
         count(*) FILTER (WHERE status = 'ok') AS n,
         count(*) FILTER (WHERE status = 'error') AS errors,
         coalesce(sum("strict"::INT) FILTER (WHERE status = 'ok'), 0) AS strict,
         coalesce(sum(proven::INT) FILTER (WHERE status = 'ok'), 0) AS proven,
         coalesce(sum(cover::INT) FILTER (WHERE status = 'ok'), 0) AS cover,
         coalesce(sum(retry::INT) FILTER (WHERE status = 'ok'), 0) AS retry,
         coalesce(sum(invalid::INT) FILTER (WHERE status = 'ok'), 0) AS invalid,
         coalesce(sum(any_fs::INT) FILTER (WHERE status = 'ok'), 0) AS any_fs,
         coalesce(sum(terminal_fs::INT) FILTER (WHERE status = 'ok'), 0) AS terminal_fs,
         coalesce(sum(replays) FILTER (WHERE status = 'ok'), 0) AS extra,
         count(recovered) FILTER (WHERE status = 'ok') AS lab_n,
         coalesce(sum(recovered::INT) FILTER (WHERE status = 'ok'), 0) AS recovered,
         coalesce(sum(harm::INT) FILTER (WHERE status = 'ok'), 0) AS harm,
         coalesce(sum(harm_duplicate::INT) FILTER (WHERE status = 'ok'), 0) AS harm_duplicate,
         coalesce(sum(harm_wrong_value::INT) FILTER (WHERE status = 'ok'), 0) AS harm_wrong_value,
         coalesce(sum(harm_collateral::INT) FILTER (WHERE status = 'ok'), 0) AS harm_collateral,
         coalesce(sum(harm_data_loss::INT) FILTER (WHERE status = 'ok'), 0) AS harm_data_loss,
         coalesce(sum(harm_incomplete::INT) FILTER (WHERE status = 'ok'), 0) AS harm_incomplete,
         coalesce(sum(invalid_action::INT) FILTER (WHERE status = 'ok'), 0) AS invalid_action,
         count(*) FILTER (WHERE status = 'ok' AND recovered IS NOT NULL AND "strict" AND recovered) AS strict_recovered,
         count(*) FILTER (WHERE status = 'ok' AND recovered IS NOT NULL AND "strict" AND NOT recovered) AS strict_unrecovered,
         count(*) FILTER (WHERE status = 'ok' AND recovered IS NOT NULL AND NOT "strict" AND recovered) AS other_recovered,
         count(*) FILTER (WHERE status = 'ok' AND recovered IS NOT NULL AND NOT "strict" AND NOT recovered) AS other_unrecovered,
         coalesce(sum(calls) FILTER (WHERE status = 'ok'), 0) AS calls,
         coalesce(sum(lab_ms) FILTER (WHERE status = 'ok'), 0) AS lab_ms
  FROM ${src} GROUP BY ALL ORDER BY ALL`);
const total = await con.runAndReadAll(`SELECT count(*) AS rows FROM ${src}`);
console.log(JSON.stringify({
  rows: Number(total.getRowObjectsJson()[0].rows),
  columns: schema.getRowObjectsJson().map(r => ({ name: r.column_name, type: r.column_type })),
  cells: cells.getRowObjectsJson().map(r => {
    const c = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, /^\d+$/.test(v) ? Number(v) : v]));
    c.label_action = {};
    for (const k of ['strict_recovered', 'strict_unrecovered', 'other_recovered', 'other_unrecovered']) {
      c.label_action[k] = c[k];
      delete c[k];
    }
    return c;
  }),
}));
