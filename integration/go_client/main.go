// A Go program against the stack, as a Go team would write it with spark-connect-go: it reads the env file
// `hudi-connect stack up` wrote, creates and changes a Hudi table through the Hudi server with Spark SQL, and
// prints what it reads back, a line a row: the commits (COMMIT), the snapshot (ROW) and an incremental query
// after the first commit completed (INCR), each a JSON value. The Python suite holds them against hudi-connect's reads.
//
// Usage: go-client ENV_FILE TABLE_NAME TABLE_PATH
//
// With "read" first, it reads a table through format("hudi") instead, on the stack's plain Spark 4 server
// (HUDI_CONNECT_SPARK4_URL, `stack up --services spark4`) that runs hudi-connect's Python data source (no Hudi
// jar): each REQUEST is NAME or NAME:key=value;key=value (Hudi's read options), NAME "sql" reading through
// CREATE TEMPORARY VIEW ... USING hudi; each row prints as NAME and a JSON array of id, v, ts and part, or, for
// a NAME starting "cdc" (a change query), of Hudi's CDC columns op, ts_ms, before and after.
//
// Usage: go-client read ENV_FILE TABLE_PATH REQUEST...
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/apache/spark-connect-go/spark/sql"
	"github.com/apache/spark-connect-go/spark/sql/functions"
)

// readEnvFile reads KEY=value lines, values quoted as a POSIX shell quotes them ('...', with ' as '"'"').
func readEnvFile(path string) (map[string]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	env := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		key, value, found := strings.Cut(scanner.Text(), "=")
		if !found {
			continue
		}
		if strings.HasPrefix(value, "'") {
			value = strings.ReplaceAll(strings.Trim(value, "'"), `'"'"'`, "'")
		}
		env[key] = value
	}
	return env, scanner.Err()
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

// query runs a statement and prints each row as kind and a JSON array of its values.
func query(ctx context.Context, spark sql.SparkSession, kind, statement string) [][]any {
	df, err := spark.Sql(ctx, statement)
	must(err)
	rows, err := df.Collect(ctx)
	must(err)
	var values [][]any
	for _, row := range rows {
		line, err := json.Marshal(row.Values())
		must(err)
		if kind != "" {
			fmt.Printf("%s\t%s\n", kind, line)
		}
		values = append(values, row.Values())
	}
	return values
}

// readThroughDataSource prints the rows of each request read through format("hudi").
func readThroughDataSource(ctx context.Context, spark sql.SparkSession, path string, requests []string) {
	for _, request := range requests {
		name, options, _ := strings.Cut(request, ":")
		var df sql.DataFrame
		var err error
		if name == "sql" {
			quoted := strings.ReplaceAll(strings.ReplaceAll(path, `\`, `\\`), "'", `\'`) // Spark SQL escapes
			query(ctx, spark, "", fmt.Sprintf(`CREATE OR REPLACE TEMPORARY VIEW go_hudi USING hudi OPTIONS (path '%s')`,
				quoted))
			df, err = spark.Sql(ctx, "SELECT id, v, ts, part FROM go_hudi")
		} else {
			reader := spark.Read().Format("hudi")
			if options != "" {
				for _, option := range strings.Split(options, ";") {
					key, value, _ := strings.Cut(option, "=")
					reader = reader.Option(key, value)
				}
			}
			df, err = reader.Load(path)
			must(err)
			if strings.HasPrefix(name, "cdc") { // Hudi's CDC schema
				df, err = df.Select(ctx, functions.Col("op"), functions.Col("ts_ms"), functions.Col("before"),
					functions.Col("after"))
			} else {
				df, err = df.Select(ctx, functions.Col("id"), functions.Col("v"), functions.Col("ts"), functions.Col("part"))
			}
		}
		must(err)
		rows, err := df.Collect(ctx)
		must(err)
		for _, row := range rows {
			line, err := json.Marshal(row.Values())
			must(err)
			fmt.Printf("%s\t%s\n", name, line)
		}
	}
}

// session connects to the server the env file names under key (HUDI_CONNECT_SPARK_URL: the Hudi server;
// HUDI_CONNECT_SPARK4_URL: the plain Spark 4 server with format("hudi")).
func session(ctx context.Context, envFile, key string) sql.SparkSession {
	env, err := readEnvFile(envFile)
	must(err)
	url, found := env[key]
	if !found {
		must(fmt.Errorf("%s names no %s (start the stack with its service)", envFile, key))
	}
	spark, err := sql.NewSessionBuilder().Remote(url).Build(ctx) // the token travels as a header of the URL
	must(err)
	return spark
}

func main() {
	ctx := context.Background()
	if len(os.Args) >= 4 && os.Args[1] == "read" {
		spark := session(ctx, os.Args[2], "HUDI_CONNECT_SPARK4_URL")
		defer spark.Stop()
		readThroughDataSource(ctx, spark, os.Args[3], os.Args[4:])
		return
	}
	if len(os.Args) != 4 {
		must(fmt.Errorf("usage: go-client ENV_FILE TABLE_NAME TABLE_PATH"))
	}
	name, path := os.Args[2], os.Args[3]
	spark := session(ctx, os.Args[1], "HUDI_CONNECT_SPARK_URL")
	defer spark.Stop()

	for _, statement := range []string{
		fmt.Sprintf(`CREATE TABLE %s (id INT, v STRING, ts BIGINT, part STRING) USING hudi
			PARTITIONED BY (part) LOCATION '%s'
			TBLPROPERTIES (type = 'mor', primaryKey = 'id', preCombineField = 'ts')`, name, path),
		fmt.Sprintf(`INSERT INTO %s VALUES (1, 'a', 10, 'p0'), (2, 'b', 10, 'p1'), (3, 'c', 10, 'p0'),
			(4, 'd', 10, 'p1')`, name),
		fmt.Sprintf(`UPDATE %s SET v = 'b2', ts = 20 WHERE id = 2`, name),
		fmt.Sprintf(`DELETE FROM %s WHERE id = 3`, name),
		fmt.Sprintf(`MERGE INTO %s t USING (SELECT 4 AS id, 'd2' AS v, 30L AS ts, 'p1' AS part UNION ALL
			SELECT 5, 'e', 30L, 'p0') s ON t.id = s.id
			WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`, name),
	} {
		query(ctx, spark, "", statement)
	}

	// each commit's requested and completion time, oldest first: an incremental query's begin is a completion
	// time on tables of version 8 and later, exclusive
	var commits [][2]string
	for _, row := range query(ctx, spark, "", fmt.Sprintf(
		`CALL show_commits(table => '%s')`, name)) {
		commits = append(commits, [2]string{fmt.Sprint(row[0]), fmt.Sprint(row[1])})
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i][0] < commits[j][0] })
	for _, commit := range commits {
		line, err := json.Marshal(commit)
		must(err)
		fmt.Printf("COMMIT\t%s\n", line)
	}
	query(ctx, spark, "ROW", fmt.Sprintf(`SELECT id, v, ts, part FROM %s`, name))
	query(ctx, spark, "INCR", fmt.Sprintf(
		`SELECT id, v, ts, part FROM hudi_table_changes('%s', 'latest_state', '%s')`, name, commits[0][1]))
}
