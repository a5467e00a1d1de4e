package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl quota}: lists its subcommands. */
@Command(name = "quota", mixinStandardHelpOptions = true, description = "Per-tenant byte quotas (admin).",
        synopsisSubcommandLabel = "COMMAND", subcommands = {QuotaSetCommand.class})
public final class QuotaCommand extends GroupCommand {
}
