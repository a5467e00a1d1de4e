package io.mcctl.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** Base of a command that only groups subcommands: run alone, it says which subcommands there are. */
@Command
public abstract class GroupCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "'" + spec.qualifiedName() + "' needs a subcommand: one of "
                + String.join(", ", spec.subcommands().keySet()));
    }
}
