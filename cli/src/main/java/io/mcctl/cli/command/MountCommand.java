package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl mount}: lists its subcommands. */
@Command(name = "mount", mixinStandardHelpOptions = true, description = "Check a node's mount of the shared root.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {MountValidateCommand.class})
public final class MountCommand extends GroupCommand {
}
