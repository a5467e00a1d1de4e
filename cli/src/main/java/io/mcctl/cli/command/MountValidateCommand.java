package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code validate}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "validate", mixinStandardHelpOptions = true, description = "Check that this node's mount of the root is fit to join the tier. (Not built in this version.)")
public final class MountValidateCommand extends NotBuiltCommand {
}
