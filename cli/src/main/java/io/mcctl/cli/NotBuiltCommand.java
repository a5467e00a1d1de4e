package io.mcctl.cli;

import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/** Base of a command that is registered, so {@code --help} shows the whole tool, but not built in this version. */
@Command
public abstract class NotBuiltCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    /** Accepted so that the answer is "not built", not a complaint about arguments. */
    @Unmatched
    List<String> arguments;

    @Override
    public Integer call() {
        throw new CliException(ExitCodes.NOT_BUILT, "'" + spec.qualifiedName() + "' is not built in this version of mcctl");
    }
}
