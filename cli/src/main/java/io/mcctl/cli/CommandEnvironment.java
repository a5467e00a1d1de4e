package io.mcctl.cli;

import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;

/**
 * What a command line runs with: the environment variables (the process's, or the ones a test or the shell passes)
 * and the way to build further command trees. The root command of the tree carries them; a command, option or
 * helper asks for them through its {@link CommandSpec}, so nothing below the root depends on the root's class.
 */
public final class CommandEnvironment {

    /** The root command of a tree whose commands read the environment. */
    public interface Carrier {
        /** The variables, unmodifiable. */
        Map<String, String> environment();

        /** Builds further trees like the one this root heads. */
        CommandTrees trees();
    }

    private CommandEnvironment() {
    }

    /** The environment variables of the command line {@code spec} belongs to. */
    public static Map<String, String> of(CommandSpec spec) {
        return carrier(spec).environment();
    }

    /** Builds further trees like the one {@code spec} belongs to. */
    public static CommandTrees trees(CommandSpec spec) {
        return carrier(spec).trees();
    }

    private static Carrier carrier(CommandSpec spec) {
        Object root = spec.root().userObject();
        if (root instanceof Carrier carrier) {
            return carrier;
        }
        throw new IllegalStateException("the root command " + root.getClass().getName() + " carries no environment");
    }
}
