package io.mcctl.cli;

import java.io.PrintWriter;
import java.util.Map;
import picocli.CommandLine;

/**
 * Builds fresh mcctl command trees: what a command that runs or describes other commands (the shell, the completion
 * scripts) is given, so it needs no knowledge of the root command or of where the subcommands come from.
 */
public interface CommandTrees {

    /** The tree with only what running {@code args} needs. */
    CommandLine forArgs(Map<String, String> environment, PrintWriter out, PrintWriter err, String[] args);

    /** The whole configured tree, for reading the model (completion, docs). */
    CommandLine whole(Map<String, String> environment, PrintWriter out, PrintWriter err);
}
