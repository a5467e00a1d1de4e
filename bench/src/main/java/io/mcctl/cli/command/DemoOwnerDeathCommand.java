package io.mcctl.cli.command;

import io.grpc.Status;
import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.perkey.PerKeyStore;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl demo owner-death}: the RFC's problem (2), shown with real processes. */
@Command(name = "owner-death", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Offload through node A in both modes, kill -9 A, read from node B: the LOCAL_DISK objects are gone from the "
                + "master although their files are intact on A's disk; the DISTRIBUTED_DISK objects read back byte-exact.",
                "Starts a master and nodes A and B as separate processes on a temporary root, removed after. Exit 0 when the "
                        + "outcome is as described, 1 otherwise."})
public final class DemoOwnerDeathCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--objects", paramLabel = "N", defaultValue = "8", description = "Objects per mode (default: ${DEFAULT-VALUE}).")
    int objects;

    @Option(names = "--size", paramLabel = "SIZE", defaultValue = "64KiB", description = "Bytes per object (default: ${DEFAULT-VALUE}).")
    String size;

    @Option(names = "--client-ttl", paramLabel = "DURATION", defaultValue = "3s",
            description = "The master's client_ttl: how long A has been silent when it is declared dead (default: ${DEFAULT-VALUE}).")
    String ttl;

    private final List<String> steps = new ArrayList<>();

    private void step(String format, Object... args) {
        String line = String.format(java.util.Locale.ROOT, format, args);
        steps.add(line);
        if (!output.json()) {
            spec.commandLine().getOut().println(line);
            spec.commandLine().getOut().flush();
        }
    }

    @Override
    public Integer call() throws Exception {
        if (objects < 1 || objects > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --objects " + objects + ": allowed is 1 to 10000");
        }
        long bytes;
        Duration clientTtl;
        try {
            bytes = SizeParser.parse(size);
            clientTtl = DurationParser.parse(ttl);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --size '" + size + "' or --client-ttl '" + ttl + "': allowed are "
                    + SizeParser.ALLOWED + " and " + DurationParser.ALLOWED);
        }
        if (bytes < 1 || bytes > (4L << 20) || clientTtl.isZero()) {
            throw new CliException(ExitCodes.USAGE, "invalid --size '" + size + "' or --client-ttl '" + ttl
                    + "': allowed are 1 byte to 4MiB and a positive duration");
        }
        Path dir = Files.createTempDirectory("mcctl-demo-owner-death");
        Map<String, Object> outcome = new LinkedHashMap<>();
        boolean asDescribed;
        try (MasterProcess master = MasterProcess.start(List.of("-Xmx256m"), Duration.ofSeconds(60), b -> b.directory(dir.toFile()),
                "--root", dir.resolve("root").toString(), "--bucket-count", "8", "--bucket-size", "64MiB", "--client-ttl", ttl);
             NodeProcess a = NodeProcess.start(List.of("-Xmx256m"), Duration.ofSeconds(60), b -> b.directory(dir.toFile()), master.address(),
                     "--local-disk", dir.resolve("disk-a").toString());
             NodeProcess b = NodeProcess.start(List.of("-Xmx256m"), Duration.ofSeconds(60), p -> p.directory(dir.toFile()), master.address(),
                     "--local-disk", dir.resolve("disk-b").toString());
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10));
             NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(30));
             NodeClient viaB = new NodeClient(b.endpoint(), Duration.ofSeconds(30))) {
            step("master at %s (client_ttl %s); node A %s at %s; node B %s at %s", master.address(), ttl, a.clientId(), a.endpoint(),
                    b.clientId(), b.endpoint());
            SplittableRandom random = new SplittableRandom(5);
            Map<String, byte[]> written = new LinkedHashMap<>();
            for (int i = 0; i < objects; i++) {
                for (String mode : List.of("ld", "dd")) {
                    byte[] data = new byte[(int) bytes];
                    random.nextBytes(data);
                    String key = mode + "-" + i;
                    viaA.write("demo", key, ByteBuffer.wrap(data), mode.equals("ld") ? OffloadMode.PER_KEY : OffloadMode.PAGE_MODE);
                    written.put(key, data);
                }
            }
            step("offloaded through node A: %d objects of %s with page_mode false (LOCAL_DISK, owned by A) and %d with page_mode "
                    + "true (DISTRIBUTED_DISK, no owner)", objects, SizeParser.format(bytes), objects);
            int[] before = readAll(viaB, written);
            step("read from node B before: %d/%d LOCAL_DISK (through A), %d/%d DISTRIBUTED_DISK (direct pread)", before[0], objects,
                    before[1], objects);
            long killed = System.nanoTime();
            a.kill();
            step("kill -9 node A (pid %d)", a.process().pid());
            ClientInfo dead;
            while ((dead = info(client, a.clientId())).getAlive()) {
                Thread.sleep(50);
            }
            step("node A declared dead %d ms after the kill; CleanupStaleHandles removed %d of its replicas",
                    (System.nanoTime() - killed) / 1_000_000, dead.getCleanedReplicas());
            int[] after = readAll(viaB, written);
            long intact = PerKeyStore.open(dir.resolve("disk-a")).list().size();
            step("read from node B after: %d/%d LOCAL_DISK (gone from the master; %d of their files still intact on A's disk), "
                    + "%d/%d DISTRIBUTED_DISK byte-exact", after[0], objects, intact, after[1], objects);
            asDescribed = before[0] == objects && before[1] == objects && after[0] == 0 && after[1] == objects && intact == objects;
            outcome.put("objects_per_mode", objects);
            outcome.put("object_size", bytes);
            outcome.put("local_disk_before", before[0]);
            outcome.put("distributed_disk_before", before[1]);
            outcome.put("cleaned_replicas", dead.getCleanedReplicas());
            outcome.put("local_disk_after", after[0]);
            outcome.put("local_disk_files_intact", intact);
            outcome.put("distributed_disk_after_byte_exact", after[1]);
        } finally {
            FileTrees.deleteTree(dir);
        }
        step(asDescribed ? "as the RFC says: the owner's death erased metadata of intact data; page mode lost nothing"
                : "the outcome differs from the RFC's account (see the lines above)");
        if (output.json()) {
            outcome.put("as_described", asDescribed);
            outcome.put("steps", steps);
            PrintWriter out = spec.commandLine().getOut();
            out.println(OutputMixin.toJson(outcome));
            out.flush();
        }
        return asDescribed ? ExitCodes.OK : ExitCodes.FAILED;
    }

    /** How many LOCAL_DISK ("ld-") and DISTRIBUTED_DISK ("dd-") keys node B reads back byte-exact, from the expected replica. */
    private static int[] readAll(NodeClient viaB, Map<String, byte[]> written) {
        int[] read = new int[2];
        for (Map.Entry<String, byte[]> entry : written.entrySet()) {
            boolean local = entry.getKey().startsWith("ld-");
            try {
                NodeClient.Read got = viaB.get("demo", entry.getKey());
                if (got.type() == (local ? ReplicaType.LOCAL_DISK : ReplicaType.DISTRIBUTED_DISK)
                        && got.data().equals(ByteBuffer.wrap(entry.getValue()))) {
                    read[local ? 0 : 1]++;
                }
            } catch (NodeException e) {
                if (e.code() != Status.Code.NOT_FOUND) {
                    throw e;
                }
            }
        }
        return read;
    }

    private static ClientInfo info(MasterClient client, String clientId) {
        return client.listClients().getClientsList().stream().filter(c -> c.getClientId().equals(clientId)).findFirst()
                .orElseThrow(() -> new CliException(ExitCodes.FAILED, "the master no longer lists client " + clientId));
    }
}
