package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.master.node.DramSegment;
import io.mcctl.master.node.NodeServer;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.config.StorageSettings;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl node start}: a node in the foreground until SIGTERM or Ctrl-C. */
@Command(name = "start", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run a node in the foreground: it registers with the master under a new client id (a UUID), pings it "
                + "within every TTL and serves reads of what it holds on its transfer endpoint (--listen).",
                "Offloads through it (mcctl node offload) go to pages of the shared bucket files in page mode (DISTRIBUTED_DISK, no owner), "
                        + "or with page_mode false to one file per key under --local-disk (LOCAL_DISK, owned by this node: "
                        + "when it dies the master forgets them). A node that misses its TTL is dead; after a master restart "
                        + "it registers again. Started before its master (or during a fail-over) it waits for one, trying "
                        + "again until it answers.",
                "With --memory SIZE the node holds a DRAM segment of SIZE off-heap: offloads with --mode memory go into it "
                        + "(MEMORY replicas, read first), and every --promotion-interval it asks the master for promotion tasks "
                        + "(objects read often enough, or mcctl promote), copies each from the shared bucket file into its "
                        + "segment, checks the CRC32C and tells the master. A re-registration starts with the whole segment free.",
                "The node's endpoint serves plaintext with no access control: run it on a trusted network."})
public final class NodeStartCommand implements Callable<Integer>, SettingsOptions.UsesSettings {

    private static final Logger LOG = LoggerFactory.getLogger("mcctl.node");

    @Spec
    CommandSpec spec;

    @Mixin
    MasterOptions master;

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "0.0.0.0:50061",
            description = "Address the node's endpoint listens on; port 0 picks a free one (default: ${DEFAULT-VALUE}).")
    String listen;

    @Option(names = "--advertise", paramLabel = "HOST",
            description = "Host other nodes reach this one at (default: the --listen host, or this machine's name when it is 0.0.0.0).")
    String advertise;

    @Option(names = "--local-disk", paramLabel = "DIR",
            description = "Directory for per-key files (page_mode false): 256 hashed directories, one file per object.")
    Path localDisk;

    @Option(names = "--memory", paramLabel = "SIZE",
            description = "Size of this node's DRAM segment for MEMORY replicas, off-heap: 1MiB up to what the JVM may allocate "
                    + "off-heap (-XX:MaxDirectMemorySize, set through MCCTL_JAVA_OPTS). Default: none.")
    String memory;

    @Option(names = "--promotion-interval", paramLabel = "DURATION", defaultValue = "200ms",
            description = "How often a node with --memory and the shared root asks the master for promotion tasks, 10ms to 1h "
                    + "(default: ${DEFAULT-VALUE}).")
    String promotionInterval;

    @Override
    public List<Setting<?>> settings() {
        return List.of(StorageSettings.PAGE_MODE, StorageSettings.IO, StorageSettings.USRBIO_LIBRARY);
    }

    static String[] hostAndPort(String text, String option) {
        int colon = text.lastIndexOf(':');
        if (colon > 0 && colon < text.length() - 1) {
            try {
                int port = Integer.parseInt(text.substring(colon + 1));
                if (port >= 0 && port <= 65535) {
                    return new String[] {text.substring(0, colon), String.valueOf(port)};
                }
            } catch (NumberFormatException e) {
                // below
            }
        }
        throw new CliException(ExitCodes.USAGE, "invalid " + option + " '" + text + "': allowed is HOST:PORT with a port from 0 to 65535");
    }

    @Override
    public Integer call() throws Exception {
        long memoryBytes = 0;
        if (memory != null) {
            try {
                memoryBytes = SizeParser.parse(memory);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid --memory '" + memory + "' (" + e.getMessage() + "): allowed is "
                        + SizeParser.ALLOWED + ", at least " + SizeParser.format(DramSegment.MIN_BYTES));
            }
            String problem = DramSegment.problemWith(memoryBytes);
            if (problem != null) {
                throw new CliException(ExitCodes.USAGE, "invalid --memory '" + memory + "': " + problem);
            }
        }
        Duration interval;
        try {
            interval = DurationParser.parse(promotionInterval);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --promotion-interval '" + promotionInterval + "': allowed is "
                    + DurationParser.ALLOWED);
        }
        if (interval.toMillis() < 10 || interval.compareTo(Duration.ofHours(1)) > 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --promotion-interval '" + promotionInterval + "': allowed is 10ms to 1h");
        }
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        String[] address = hostAndPort(listen, "--listen");
        boolean pageMode = config.get(StorageSettings.PAGE_MODE);
        NodeServer node;
        try {
            node = NodeServer.start(new NodeServer.Options(master.target(spec), address[0], Integer.parseInt(address[1]), advertise,
                    localDisk, pageMode, master.callTimeout(), master.security(spec), memoryBytes, interval,
                    io.mcctl.storage.io.BucketIoSelector.Wanted.of(config)));
        } catch (DramSegment.AllocationException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --memory '" + memory + "': " + e.getMessage());
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping");
            node.close();
        }, "mcctl-node-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        out.printf("mcctl node %s serving on %s (master %s, ttl %d ms, page mode %s%s, io %s, local disk %s, memory %s)%n", node.clientId(),
                node.endpoint(), master.target(spec), node.ttlMillis(), pageMode, node.tierProblem() == null ? "" : " but no shared root here",
                node.ioMode(),
                localDisk == null ? "none" : node.localDisk().root(), memoryBytes == 0 ? "none"
                        : SizeParser.format(memoryBytes) + (node.tierProblem() == null ? ", promotion every " + DurationParser.format(interval)
                        : ", no promotion without the shared root"));
        out.flush();
        node.awaitTermination();
        return ExitCodes.OK;
    }
}
