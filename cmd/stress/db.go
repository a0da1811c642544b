package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/mcpstress/stress/env/dbenv"
	"github.com/mcpstress/stress/study"
)

// dbLong is what stress help db prints after the forms.
const dbLong = `The database environment runs scenarios on a real SQL database behind a
real MCP server (DBHub, or a server of your own a set names), through the
fault proxy (docs/database.md). table executes every policy's canonical
recovery of every scenario of the set, each on a fresh database, prints the
execution table, and fails naming each scenario whose preferred_policies or
non_harm execution does not prove. record makes each scenario's first call
and writes its corpus record to DIR (one file per server pseudonym), its
profile coding proposed by rules, for a person to check and stress confirm;
it refuses a set whose preferred policies execution does not prove. -set
is a set file (docs/bring-your-own-server.md; default: the shipped shop
set); -database postgres runs on a PostgreSQL cluster started from the
machine's binaries, and STRESS_DB_SERVERS locates DBHub.`

// cmdDB runs the database environment's subcommands, table and record.
func cmdDB(fs *flag.FlagSet) action {
	setFile := fs.String("set", "", "a scenario set `FILE` (default: the shipped shop set)")
	database := fs.String("database", dbenv.SQLite, "the `ENGINE` the databases run on: sqlite or postgres")
	out := fs.String("out", "", "record: write the corpus to `DIR`, which must not exist")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usageError("db: name one subcommand, table or record")
		}
		sub := args[0]
		if sub != "table" && sub != "record" {
			return usageError("db: unknown subcommand %q (want table or record)", sub)
		}
		if sub == "table" && *out != "" {
			return usageError("db table: flag -out is record's")
		}
		if sub == "record" && *out == "" {
			return usageError("db record: flag -out is required")
		}
		if !slices.Contains([]string{dbenv.SQLite, dbenv.Postgres}, *database) {
			return usageError("db: flag -database: want sqlite or postgres, got %q", *database)
		}
		set, err := dbSet(*setFile)
		if err != nil {
			return usageError("db %s: flag -set: %v", sub, err)
		}
		node, script, err := dbenv.FindDBHub(*setFile)
		if err != nil && len(set.Server) == 0 {
			return fmt.Errorf("db %s: %w", sub, err)
		}
		f, err := dbenv.NewFactory(ctx, set, dbenv.Options{Engine: *database, Node: node, DBHub: script, Reuse: true})
		if err != nil {
			return fmt.Errorf("db %s: %w", sub, err)
		}
		defer f.Close()
		table, problems, err := dbenv.ExecutionTable(ctx, f, 3)
		if err != nil {
			return fmt.Errorf("db %s: %w", sub, err)
		}
		if sub == "table" {
			if _, err := stdout.Write(table); err != nil {
				return err
			}
		}
		if len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintln(stderr, p)
			}
			return fmt.Errorf("db %s: execution does not prove the declared sets of %d scenario(s) of set %s: set preferred_policies to the proven ones", sub, len(problems), set.Name)
		}
		if sub == "table" {
			return nil
		}
		recs, err := dbenv.Records(ctx, f)
		if err != nil {
			return fmt.Errorf("db record: %w", err)
		}
		if err := study.WriteCorpus(*out, recs); err != nil {
			return fmt.Errorf("db record: writing %s: %w", *out, err)
		}
		fmt.Fprintf(stdout, "recorded %d scenarios of set %s into %s (profile coding proposed by rules: check each record, then stress confirm)\n", len(recs), set.Name, *out)
		return nil
	}
}

// dbSet is the set in file, or the shipped one.
func dbSet(file string) (*dbenv.Set, error) {
	if file == "" {
		return dbenv.BuiltinSet("")
	}
	return dbenv.ParseFile(file)
}
