package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code shell}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "shell", mixinStandardHelpOptions = true, description = "Interactive shell: every command, history, completion, one JVM. (Not built in this version.)")
public final class ShellCommand extends NotBuiltCommand {
}
