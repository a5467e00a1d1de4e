package io.mcctl.cli.command;

import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.protocol.Quoted;
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
        ExitCodes.checkKeys(keys);
        if (inFlight) {
            return dropInFlight(tenant, out, err);
        }
        try (MasterClient master = client.connect(spec)) {
            List<KeyError> results = master.batchRemove(keys, Collections.nCopies(keys.size(), tenant)).getResultsList();
            List<String> writing = beingWritten(master, tenant, results);
            for (int i = 0; i < keys.size(); i++) {
                KeyError result = results.get(i);
                if (result.getError() == ErrorCode.OK) {
                    out.println("removed " + keys.get(i));
                } else if (writing.contains(keys.get(i))) {
                    err.println("mcctl: error: " + Quoted.shortened(keys.get(i)) + ": it is being written (an allocation in flight, nothing committed yet), so "
                            + "there is nothing to remove: wait for its writer to finish, or drop the allocation with mcctl rm --in-flight "
                            + Quoted.shortened(keys.get(i)));
                    // Not NOT_FOUND: the key is about to exist, and a script that takes 3 for 'already gone' would be wrong.
                    worst = Math.max(worst, ExitCodes.FAILED);
                } else {
                    err.println("mcctl: error: " + Quoted.shortened(keys.get(i)) + ": " + result.getMessage());
                    worst = Math.max(worst, ExitCodes.ofKeyError(result.getError()));
                }
            }
        }
        out.flush();
        err.flush();
        return worst;
    }

    /**
     * Of the keys the master found nothing to remove under, those it says are still being written. The master's remove
     * answers not-found for both; its lookup tells them apart (and counts a miss in the tenant's read statistics).
     */
    private List<String> beingWritten(MasterClient master, String tenant, List<KeyError> results) {
        List<String> notFound = new java.util.ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (results.get(i).getError() == ErrorCode.OBJECT_NOT_FOUND) {
                notFound.add(keys.get(i));
            }
        }
        if (notFound.isEmpty()) {
            return List.of();
        }
        List<io.mcctl.master.proto.v1.MappingResult> looked = master.batchGetMapping(notFound, Collections.nCopies(notFound.size(), tenant))
                .getResultsList();
        List<String> writing = new java.util.ArrayList<>();
        for (int i = 0; i < notFound.size(); i++) {
            if (looked.get(i).getStatus().getError() == ErrorCode.REPLICA_IS_NOT_READY) {
                writing.add(notFound.get(i));
            }
        }
        return writing;
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
                    err.println("mcctl: error: " + Quoted.shortened(key) + ": " + e.getMessage());
                    worst = Math.max(worst, ExitCodes.ofKeyError(e.code()));
                }
            }
        }
        out.flush();
        err.flush();
        return worst;
    }
}
