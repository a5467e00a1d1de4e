package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.master.node.NodeServer;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.StorageSettings;
import java.io.PrintWriter;
import java.nio.file.Path;
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
                        + "it registers again.",
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
            description = "A DRAM segment for MEMORY replicas: not built yet, refused.")
    String memory;

    @Override
    public List<Setting<?>> settings() {
        return List.of(StorageSettings.PAGE_MODE);
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
        if (memory != null) {
            throw new CliException(ExitCodes.USAGE, "--memory " + memory
                    + ": the DRAM tier (MEMORY replicas in a node's segment) is not built yet; start the node without --memory");
        }
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        String[] address = hostAndPort(listen, "--listen");
        boolean pageMode = config.get(StorageSettings.PAGE_MODE);
        NodeServer node = NodeServer.start(new NodeServer.Options(master.target(spec), address[0], Integer.parseInt(address[1]), advertise,
                localDisk, pageMode, master.callTimeout(), master.security(spec)));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping");
            node.close();
        }, "mcctl-node-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        out.printf("mcctl node %s serving on %s (master %s, ttl %d ms, page mode %s%s, local disk %s)%n", node.clientId(), node.endpoint(),
                master.target(spec), node.ttlMillis(), pageMode, node.tierProblem() == null ? "" : " but no shared root here",
                localDisk == null ? "none" : node.localDisk().root());
        out.flush();
        node.awaitTermination();
        return ExitCodes.OK;
    }
}
