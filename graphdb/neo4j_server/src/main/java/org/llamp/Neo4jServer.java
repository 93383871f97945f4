package org.llamp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Neo4j Community (the embedded DBMS) serving Bolt on 127.0.0.1, authentication on.
 *
 * <p>Arguments: {@code --home DIR} (the DBMS home: databases, transaction logs, logs),
 * {@code --port N} (0: any free port), {@code --pagecache SIZE} (e.g. {@code 1g}) and
 * {@code --read-only} (database {@code neo4j} refuses writes: {@code server.databases.read_only};
 * the system database stays writable so that the password can be set).
 * The password of user {@code neo4j} comes from the environment variable
 * {@code LLAMP_NEO4J_PASSWORD} (never the command line, which other users can read).
 *
 * <p>{@code LOAD CSV} may not read files ({@code dbms.security.allow_csv_import_from_file_urls}
 * false). Prints one line, {@code ready port=N version=V}, on stdout once Bolt accepts connections;
 * stops cleanly (checkpoint, then exit 0) on SIGTERM or when stdin is closed, so a parent that
 * dies takes the server with it.
 */
public final class Neo4jServer {
  private Neo4jServer() {}

  public static void main(String[] args) throws Exception {
    Path home = null;
    int port = 0;
    String pagecache = "512m";
    boolean readOnly = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--home" -> home = Path.of(args[++i]);
        case "--port" -> port = Integer.parseInt(args[++i]);
        case "--pagecache" -> pagecache = args[++i];
        case "--read-only" -> readOnly = true;
        default -> fail("unknown argument " + args[i]);
      }
    }
    if (home == null) {
      fail("--home DIR is required");
    }
    String password = System.getenv("LLAMP_NEO4J_PASSWORD");
    if (password == null || password.length() < 8) {
      fail("LLAMP_NEO4J_PASSWORD must hold the password (8 characters or more)");
    }

    DatabaseManagementService dbms =
        new DatabaseManagementServiceBuilder(home)
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
            .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
            .setConfig(GraphDatabaseSettings.auth_enabled, true)
            // As a packaged server confines LOAD CSV to its import directory; here no file
            // URL may be read at all (the embedded default reads any file the JVM can).
            .setConfig(GraphDatabaseSettings.allow_file_urls, false)
            .setConfig(GraphDatabaseSettings.load_csv_file_url_root, home.resolve("import"))
            .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.parse(pagecache))
            .setConfig(
                GraphDatabaseSettings.read_only_databases,
                readOnly ? Set.of(GraphDatabaseSettings.DEFAULT_DATABASE_NAME) : Set.of())
            .build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  dbms.shutdown();
                  stopped.countDown();
                }));

    try {
      serve(dbms, password, stopped);
    } catch (RuntimeException | Error err) {
      err.printStackTrace();
      System.exit(1); // the shutdown hook stops the DBMS, whose threads would keep the JVM up
    }
  }

  private static void serve(DatabaseManagementService dbms, String password, CountDownLatch stopped)
      throws InterruptedException {
    // The embedded DBMS runs with the built-in user neo4j; give it the password (and no
    // "change required", so Bolt clients can run queries at once).
    dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
        .executeTransactionally(
            "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
            Map.of("password", password));

    GraphDatabaseAPI db =
        (GraphDatabaseAPI) dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
    int bound =
        db.getDependencyResolver()
            .resolveDependency(ConnectorPortRegister.class)
            .getLocalAddress(ConnectorType.BOLT)
            .getPort();
    String version = // asked of the system database: an embedded transaction on a read-only
        // database is refused even for a read
        dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
            .executeTransactionally(
            "CALL dbms.components() YIELD versions RETURN versions[0] AS v",
            Map.of(),
            result -> String.valueOf(result.next().get("v")));
    System.out.println("ready port=" + bound + " version=" + version);
    System.out.flush();

    Thread watcher =
        new Thread(
            () -> {
              try {
                InputStream in = System.in;
                while (in.read() != -1) {
                  // nothing to read: stdin only tells that the parent is still there
                }
              } catch (IOException ignored) {
                // a broken pipe means the parent is gone: stop as on EOF
              }
              System.exit(0);
            },
            "stdin-watcher");
    watcher.setDaemon(true);
    watcher.start();
    stopped.await();
  }

  private static void fail(String message) {
    System.err.println("llamp-neo4j-server: " + message);
    System.exit(2);
  }
}
