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
                "granted on them has run out."})
public final class RmCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(arity = "1..*", paramLabel = "KEY", description = "Keys to remove.")
    List<String> keys;

    @Override
    public Integer call() {
        String tenant = client.tenant();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        int worst = ExitCodes.OK;
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
}
