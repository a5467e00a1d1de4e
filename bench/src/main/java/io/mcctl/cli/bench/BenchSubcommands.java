package io.mcctl.cli.bench;

import io.mcctl.cli.SubcommandProvider;
import io.mcctl.cli.command.BenchCommand;
import io.mcctl.cli.command.DemoCommand;
import java.util.List;

/** Adds {@code mcctl demo} and {@code mcctl bench} to the binary this module is part of. */
public final class BenchSubcommands implements SubcommandProvider {

    @Override
    public List<Class<?>> subcommands() {
        return List.of(DemoCommand.class, BenchCommand.class);
    }
}
