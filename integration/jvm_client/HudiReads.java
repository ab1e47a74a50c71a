// A JVM Connect client of Spark 4 (Spark's own client jar, from plain Java) reading Hudi tables through
// format("hudi") on a plain server: the server runs hudi-connect's Python data source, no Hudi jar anywhere.
// The session is the Connect client's own class: the generic builder would look for a local Spark first.
// Usage: HudiReads <sc:// URL with its token header> <table path> <request>...
// A request is NAME or NAME:key=value;key=value (Hudi's read options); NAME "sql" reads through
// CREATE TEMPORARY VIEW ... USING hudi; a NAME starting "cdc" reads Hudi's CDC columns of a change query. Prints
// each row of each request as "NAME\t<json>" (id, v, ts, part; or op, ts_ms, before, after).
import java.util.List;

import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connect.SparkSession;

public final class HudiReads {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        String path = args[1];
        SparkSession spark = SparkSession.builder().remote(url).getOrCreate();
        try {
            for (int i = 2; i < args.length; i++) {
                String[] request = args[i].split(":", 2);
                String name = request[0];
                List<Row> rows;
                if (name.equals("sql")) {
                    String quoted = path.replace("\\", "\\\\").replace("'", "\\'");  // Spark SQL escapes
                    spark.sql("CREATE OR REPLACE TEMPORARY VIEW jvm_hudi USING hudi OPTIONS (path '" + quoted + "')");
                    rows = spark.sql("SELECT id, v, ts, part FROM jvm_hudi").collectAsList();
                } else {
                    DataFrameReader reader = spark.read().format("hudi");
                    if (request.length > 1 && !request[1].isEmpty()) {
                        for (String option : request[1].split(";")) {
                            String[] pair = option.split("=", 2);
                            reader = reader.option(pair[0], pair[1]);
                        }
                    }
                    rows = name.startsWith("cdc")  // Hudi's CDC schema
                        ? reader.load(path).select("op", "ts_ms", "before", "after").collectAsList()
                        : reader.load(path).select("id", "v", "ts", "part").collectAsList();
                }
                for (Row row : rows) {
                    System.out.println(name + "\t" + row.json());
                }
            }
        } finally {
            spark.close();
        }
    }
}
