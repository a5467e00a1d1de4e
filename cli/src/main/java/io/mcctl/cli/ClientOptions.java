package io.mcctl.cli;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.BucketIoSelector;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code --master}, {@code --timeout} ({@link MasterOptions}) and {@code --tenant} for every command that uses a tenant's keys. */
public final class ClientOptions {

    /** Environment variable with the master's address. */
    public static final String MASTER_ENV = "MCCTL_MASTER";

    @Mixin
    MasterOptions address;

    @Option(names = "--tenant", paramLabel = "TENANT", defaultValue = "default",
            description = "Tenant whose keys to use: " + KeyRules.TENANT_CHARACTERS + ", at most 64 (default: ${DEFAULT-VALUE}).")
    String tenant;

    public String tenant() {
        String problem = KeyRules.checkTenant(tenant);
        if (problem != null) {
            throw new CliException(ExitCodes.USAGE, "invalid --tenant: " + problem);
        }
        return tenant;
    }

    public String target(CommandSpec spec) {
        return address.target(spec);
    }

    public MasterClient connect(CommandSpec spec) {
        tenant();
        return address.connect(spec);
    }

    /** The settings a command that moves bucket-file bytes takes: how they move ({@code io}, {@code usrbio_library}). */
    public static final List<Setting<?>> IO_SETTINGS = List.of(StorageSettings.IO, StorageSettings.USRBIO_LIBRARY);

    /** How the command of {@code spec} moves bucket-file bytes: its {@link #IO_SETTINGS} from flags, environment and file. */
    public static BucketIoSelector.Wanted ioWanted(picocli.CommandLine.Model.CommandSpec spec) {
        return BucketIoSelector.Wanted.of(SettingsOptions.resolve(spec, IO_SETTINGS));
    }

    /**
     * This node's view of the master's root, checked against the master's layout, moving bytes through the IO {@code
     * wanted} (chosen for the master's root and fs_type; {@code io usrbio} that cannot be used here is a one-line
     * {@link ExitCodes#USAGE}). A root that is not there (the shared filesystem not mounted) is {@link
     * ExitCodes#UNAVAILABLE}, naming the bucket file that was expected.
     */
    public static TierNode node(MasterClient master, boolean writable, BucketIoSelector.Wanted wanted) throws IOException {
        try {
            return TierNode.connect(master, writable, new ClientMetrics(), wanted);
        } catch (NoSuchFileException e) {
            GetLayoutResponse layout = master.layout();
            Path root = Path.of(layout.getRootDir());
            if (Files.isDirectory(root)) {
                throw e;
            }
            Path expected = root.resolve(BucketLayout.bucketFileName(0));
            throw new CliException(ExitCodes.UNAVAILABLE, "the master at " + master.target() + " keeps its bucket files under " + root
                    + ", but " + expected + " is not on this node: check that the shared filesystem is mounted at " + root
                    + " (mcctl mount validate)", e);
        }
    }
}
