package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code mcctl node get}: read an object through a node. */
@Command(name = "get", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Read KEY through a node, which takes the best replica it can reach and falls back to the next.",
                "Best first: MEMORY (its own DRAM segment, or an RPC to the holding node, which copies the range out of its "
                        + "segment), then DISTRIBUTED_DISK (a direct pread of the shared bucket file on that node), then LOCAL_DISK "
                        + "(its own file, or an RPC to the owning node, which reads its file and streams the bytes). With --out FILE the "
                        + "bytes go to FILE (renamed into place once whole) and a report of the replica read goes to stdout; "
                        + "without it the bytes go to stdout. Exit 3 when the master knows no replica; 4 when none could be read."})
public final class NodeGetCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    NodeTargetOptions target;

    @Mixin
    OutputMixin output;

    @Option(names = "--out", paramLabel = "FILE", description = "File to write; default stdout.")
    Path outFile;

    @Parameters(index = "0", paramLabel = "KEY", description = "Key to read.")
    String key;

    @Override
    public Integer call() throws Exception {
        if (outFile != null && outFile.toAbsolutePath().getParent() != null && !Files.isDirectory(outFile.toAbsolutePath().getParent())) {
            throw new CliException(ExitCodes.USAGE, "--out " + outFile + ": its directory does not exist");
        }
        NodeClient.Read read;
        try (NodeClient node = target.connect()) {
            read = node.get(target.tenant(), key);
        } catch (NodeException e) {
            throw NodeTargetOptions.failure(e);
        }
        if (outFile == null) {
            OutputStream stdout = System.out;
            WritableByteChannel channel = Channels.newChannel(stdout);
            while (read.data().hasRemaining()) {
                channel.write(read.data());
            }
            stdout.flush();
            return ExitCodes.OK;
        }
        Path temp = outFile.toAbsolutePath().resolveSibling("." + outFile.getFileName() + ".part");
        try (WritableByteChannel channel = Files.newByteChannel(temp, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.TRUNCATE_EXISTING, java.nio.file.StandardOpenOption.WRITE)) {
            long bytes = read.data().remaining();
            while (read.data().hasRemaining()) {
                channel.write(read.data());
            }
            read.data().rewind();
            Files.move(temp, outFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            PrintWriter out = spec.commandLine().getOut();
            if (output.json()) {
                Map<String, Object> report = new LinkedHashMap<>();
                report.put("key", key);
                report.put("bytes", bytes);
                report.put("replica_type", read.type().name());
                report.put("source", read.source());
                report.put("skipped", read.skipped());
                out.println(OutputMixin.toJson(report));
            } else {
                out.printf("%s: %d bytes from %s (%s)%s%n", key, bytes, read.type(), read.source(),
                        read.skipped().isEmpty() ? "" : "; skipped: " + String.join("; ", read.skipped()));
            }
            out.flush();
        } finally {
            Files.deleteIfExists(temp);
        }
        return ExitCodes.OK;
    }
}
