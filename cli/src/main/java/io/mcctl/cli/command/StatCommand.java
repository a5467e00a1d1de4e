package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code stat}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "stat", mixinStandardHelpOptions = true, description = "Show a key's replicas: file, offset, size, bucket, pages, CRC32C. (Not built in this version.)")
public final class StatCommand extends NotBuiltCommand {
}
