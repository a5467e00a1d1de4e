package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl bitmap}: lists its subcommands. */
@Command(name = "bitmap", mixinStandardHelpOptions = true, description = "Inspect page bitmaps.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {BitmapInspectCommand.class})
public final class BitmapCommand extends GroupCommand {
}
