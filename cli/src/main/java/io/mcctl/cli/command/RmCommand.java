package io.mcctl.cli.command;

import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl rm}: remove keys. */
@Command(name = "rm", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Remove keys. A key's mapping goes at once; its pages are reused only after every read lease",
                "granted on them has run out. With --in-flight, drop the keys' allocations still being written",
                "instead: each key can be allocated again at once, its pages are kept from reuse until the",
                "allocation's deadline plus the master's allocation_grace (its writer may still be writing)."})
public final class RmCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(arity = "1..*", paramLabel = "KEY", description = "Keys to remove.")
    List<String> keys;

    @picocli.CommandLine.Option(names = "--in-flight", description = "Drop the keys' in-flight allocations (an admin call), not their mappings.")
    boolean inFlight;

    @Override
    public Integer call() {
        String tenant = client.tenant();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        int worst = ExitCodes.OK;
        for (String key : keys) {
            String problem = io.mcctl.master.service.KeyRules.checkKey(key);
            if (problem != null) {
                throw new io.mcctl.cli.CliException(ExitCodes.USAGE, "invalid key: " + problem);
            }
        }
        if (inFlight) {
            return dropInFlight(tenant, out, err);
        }
        try (MasterClient master = client.connect(spec)) {
            List<KeyError> results = master.batchRemove(keys, Collections.nCopies(keys.size(), tenant)).getResultsList();
            for (int i = 0; i < keys.size(); i++) {
                KeyError result = results.get(i);
                if (result.getError() == ErrorCode.OK) {
                    out.println("removed " + keys.get(i));
                } else {
                    err.println("mcctl: error: " + keys.get(i) + ": " + result.getMessage());
                    worst = Math.max(worst, result.getError() == ErrorCode.OBJECT_NOT_FOUND ? ExitCodes.NOT_FOUND
                            : result.getError() == ErrorCode.INVALID_PARAMS ? ExitCodes.USAGE : ExitCodes.FAILED);
                }
            }
        }
        out.flush();
        err.flush();
        return worst;
    }

    private int dropInFlight(String tenant, PrintWriter out, PrintWriter err) {
        int worst = ExitCodes.OK;
        try (MasterClient master = client.connect(spec)) {
            for (String key : keys) {
                try {
                    io.mcctl.master.proto.v1.DropInFlightAllocationResponse dropped = master.dropInFlight(tenant, key);
                    io.mcctl.master.proto.v1.DistributedDiskDescriptor place = dropped.getDistributedDisk();
                    out.println("dropped the in-flight allocation of " + key + " (" + place.getFilePath() + " offset " + place.getOffset()
                            + ", " + place.getObjectSize() + " bytes): the key can be allocated again now; "
                            + (dropped.getQuarantinedUntilMs() == 0 ? "its pages were freed (its deadline and grace had passed)"
                            : "its pages stay quarantined until " + java.time.Instant.ofEpochMilli(dropped.getQuarantinedUntilMs())
                            + " (its deadline plus the allocation grace)"));
                } catch (io.mcctl.master.client.MasterException e) {
                    if (e.unreachable()) {
                        throw e;
                    }
                    err.println("mcctl: error: " + key + ": " + e.getMessage());
                    worst = Math.max(worst, e.code() == ErrorCode.OBJECT_NOT_FOUND ? ExitCodes.NOT_FOUND
                            : e.code() == ErrorCode.INVALID_PARAMS ? ExitCodes.USAGE : ExitCodes.FAILED);
                }
            }
        }
        out.flush();
        err.flush();
        return worst;
    }
}
