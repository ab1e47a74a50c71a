// A Spark Connect client that is not Python: Spark's own JVM client, from plain Java (no Scala compiler).
// Usage: HudiChanges <sc:// URL with its token header> <table path>
// Prints the table's snapshot ("ROW\t<json>") and its changes through Hudi's SQL ("CHANGE\t<json>").
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class HudiChanges {
    public static void main(String[] args) {
        String url = args[0];
        String path = args[1];
        SparkSession spark = SparkSession.builder().remote(url).getOrCreate();
        try {
            for (Row row : spark.read().format("hudi").load(path).select("id", "v", "ts", "part").collectAsList()) {
                System.out.println("ROW\t" + row.json());
            }
            String changes = "SELECT op, ts_ms, before, after FROM hudi_table_changes('"
                + path.replace("\\", "\\\\").replace("'", "\\'") + "', 'cdc', 'earliest')";  // Spark SQL escapes
            for (Row row : spark.sql(changes).collectAsList()) {
                System.out.println("CHANGE\t" + row.json());
            }
        } finally {
            spark.close();
        }
    }
}
