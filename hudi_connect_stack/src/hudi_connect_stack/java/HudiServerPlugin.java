// Loads Hudi's metadata-table payload class as a Hudi Connect server starts, on
// the driver and on every executor (spark.plugins).
//
// Hudi 1.2's HoodieMetadataPayload.getInsertValue recognises its own schema by
// object identity, and its static initializer puts that object into Hudi's
// schema caches, where the first entry wins. When a fresh JVM's first
// metadata-table writer is a compaction that Hudi runs at the start of a write
// (the metadata table was due; nothing was rolled back first), the compaction
// caches a freshly parsed copy first: the check fails, and every
// metadata-table write of that JVM fails with it ("Error while completing
// streaming commit to metadata", then "Failed to instantiate Metadata table").
// Initializing the class first makes its own schema the cached one.
package hudiconnect;

import java.util.Collections;
import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

public final class HudiServerPlugin implements SparkPlugin {
  static final String METADATA_PAYLOAD = "org.apache.hudi.metadata.HoodieMetadataPayload";

  static void initializeHudiClasses() {
    try {
      Class.forName(METADATA_PAYLOAD, true, Thread.currentThread().getContextClassLoader());
    } catch (ClassNotFoundException absent) {
      // a server without Hudi's bundle: nothing to initialize
    } catch (LinkageError failed) {
      // a Hudi release whose class fails to load here: the server still starts, as it would without the plugin
      System.err.println("hudi-connect: could not initialize " + METADATA_PAYLOAD + ": " + failed);
    }
  }

  @Override
  public DriverPlugin driverPlugin() {
    return new DriverPlugin() {
      @Override
      public Map<String, String> init(SparkContext context, PluginContext plugin) {
        initializeHudiClasses();
        return Collections.emptyMap();
      }
    };
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new ExecutorPlugin() {
      @Override
      public void init(PluginContext plugin, Map<String, String> extraConf) {
        initializeHudiClasses();
      }
    };
  }
}
