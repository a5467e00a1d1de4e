package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import io.mcctl.master.node.NodeServer;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.storage.config.StorageSettings;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code mcctl node offload}: write a file into the tier through a node. */
@Command(name = "offload", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Write FILE under KEY through a node: in page mode, the per-key model, or the node's DRAM segment.",
                "--mode page (or --page-mode true): the node writes pages of the shared bucket files (a DISTRIBUTED_DISK "
                        + "replica, no owner); --mode per-key (or --page-mode false): one file under its --local-disk, and the "
                        + "master records a LOCAL_DISK replica owned by that node (PutStart, PutEnd); --mode memory: a range of "
                        + "its DRAM segment (mcctl node start --memory) the master picks, a MEMORY replica held by that node. "
                        + "Without either option the node's own page_mode decides. "
                        + "Exit 0 when stored; 2 on bad input; 3 when FILE does not exist; 4 when the node cannot be reached."})
public final class NodeOffloadCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    NodeTargetOptions target;

    @Mixin
    OutputMixin output;

    @Option(names = "--mode", paramLabel = "page|per-key|memory",
            description = "page: pages of the shared bucket files (DISTRIBUTED_DISK); per-key: a file on the node (LOCAL_DISK); "
                    + "memory: the node's DRAM segment (MEMORY). Default: the node's page_mode.")
    String mode;

    @Option(names = "--page-mode", paramLabel = "true|false",
            description = "true: as --mode page; false: as --mode per-key.")
    String pageMode;

    @Parameters(index = "0", paramLabel = "KEY", description = "Key to write under.")
    String key;

    @Parameters(index = "1", paramLabel = "FILE", description = "File to write.")
    Path file;

    @Override
    public Integer call() throws Exception {
        OffloadMode mode = OffloadMode.OFFLOAD_MODE_NODE_DEFAULT;
        if (this.mode != null && pageMode != null) {
            throw new CliException(ExitCodes.USAGE, "--mode " + this.mode + " and --page-mode " + pageMode + ": give one of them");
        }
        if (this.mode != null) {
            mode = switch (this.mode) {
                case "page" -> OffloadMode.PAGE_MODE;
                case "per-key" -> OffloadMode.PER_KEY;
                case "memory" -> OffloadMode.MEMORY_SEGMENT;
                default -> throw new CliException(ExitCodes.USAGE, "invalid --mode '" + this.mode + "': allowed is page, per-key or memory");
            };
        }
        if (pageMode != null) {
            try {
                mode = StorageSettings.parseBoolean(pageMode) ? OffloadMode.PAGE_MODE : OffloadMode.PER_KEY;
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid --page-mode '" + pageMode + "': allowed is true or false");
            }
        }
        if (!Files.exists(file)) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such file: " + file);
        }
        if (!Files.isRegularFile(file)) {
            throw new CliException(ExitCodes.USAGE, file + " is not a regular file");
        }
        long size = Files.size(file);
        if (size < 1 || size > NodeServer.MAX_OBJECT_BYTES) {
            throw new CliException(ExitCodes.USAGE, file + " has " + size + " bytes: an offload through a node takes 1 to "
                    + NodeServer.MAX_OBJECT_BYTES);
        }
        ByteBuffer data;
        try {
            data = ByteBuffer.wrap(Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such file: " + file);
        }
        Replica replica;
        try (NodeClient node = target.connect()) {
            replica = node.write(target.tenant(), key, data, mode).getReplica();
        } catch (NodeException e) {
            throw NodeTargetOptions.failure(e);
        }
        PrintWriter out = spec.commandLine().getOut();
        String where = switch (replica.getType()) {
            case LOCAL_DISK -> "owned by client " + replica.getLocalDisk().getClientId() + " at " + replica.getLocalDisk().getTransportEndpoint();
            case MEMORY -> "held by client " + replica.getMemory().getClientId() + " at " + replica.getMemory().getTransportEndpoint()
                    + ", segment offset " + replica.getMemory().getBufferAddress();
            default -> "in " + replica.getDistributedDisk().getFilePath() + " at offset " + replica.getDistributedDisk().getOffset();
        };
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("key", key);
            report.put("bytes", size);
            report.put("replica_type", replica.getType().name());
            report.put("where", where);
            out.println(OutputMixin.toJson(report));
        } else {
            out.printf("offloaded %s (%d bytes) through %s: %s replica %s%n", key, size, target.node, replica.getType(), where);
        }
        out.flush();
        return ExitCodes.OK;
    }
}
