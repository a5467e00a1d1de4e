package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code completion}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "completion", mixinStandardHelpOptions = true, description = "Print the bash or zsh completion script. (Not built in this version.)")
public final class CompletionCommand extends NotBuiltCommand {
}
