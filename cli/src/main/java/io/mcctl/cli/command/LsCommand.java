package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code ls}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "ls", mixinStandardHelpOptions = true, description = "List keys by tenant and prefix. (Not built in this version.)")
public final class LsCommand extends NotBuiltCommand {
}
