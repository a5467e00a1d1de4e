package io.mcctl.cli;

import io.mcctl.cli.command.PromoteCommand;
import io.mcctl.cli.command.PromotionsCommand;
import io.mcctl.cli.command.BitmapCommand;
import io.mcctl.cli.command.CompletionCommand;
import io.mcctl.cli.command.ConfigCommand;
import io.mcctl.cli.command.FsckCommand;
import io.mcctl.cli.command.GetCommand;
import io.mcctl.cli.command.LsCommand;
import io.mcctl.cli.command.MasterCommand;
import io.mcctl.cli.command.MountCommand;
import io.mcctl.cli.command.NodeCommand;
import io.mcctl.cli.command.OffloadCommand;
import io.mcctl.cli.command.QuotaCommand;
import io.mcctl.cli.command.EventsCommand;
import io.mcctl.cli.command.LayoutCommand;
import io.mcctl.cli.command.RmCommand;
import io.mcctl.cli.command.ShellCommand;
import io.mcctl.cli.command.SnapshotCommand;
import io.mcctl.cli.command.StatCommand;
import io.mcctl.cli.command.StatsCommand;
import io.mcctl.cli.command.TopCommand;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/** The root command: global options, and the environment every subcommand resolves settings from. */
@Command(name = "mcctl", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        synopsisSubcommandLabel = "COMMAND",
        description = {"mcctl runs and operates a page-mode distributed disk tier for LLM KV caches: a master allocates "
                + "pages in large shared bucket files; any node writes with pwrite and reads with a direct pread, with no hop "
                + "through the node that wrote the data.", ""},
        footer = {"", ExitCodes.HELP_TABLE, "", "Colour is used on a terminal only, never when NO_COLOR is set."})
public final class McctlCommand extends GroupCommand implements CommandEnvironment.Carrier {

    /**
     * The subcommands, in the order help lists them. They are added by {@link Main}, not by the annotation, so that a
     * command line can be given only the subcommand it runs: picocli reflects on every command class it is given, which
     * loads the classes their methods name (gRPC, protobuf, Jackson), a good part of a short command's start.
     */
    static final List<Class<?>> SUBCOMMANDS = subcommands(List.of(MasterCommand.class, OffloadCommand.class, GetCommand.class, RmCommand.class,
            LsCommand.class, StatCommand.class, StatsCommand.class, TopCommand.class, SnapshotCommand.class, FsckCommand.class, BitmapCommand.class, MountCommand.class,
            QuotaCommand.class, EventsCommand.class, LayoutCommand.class, NodeCommand.class, PromoteCommand.class, PromotionsCommand.class),
            List.of(ShellCommand.class, ConfigCommand.class, CompletionCommand.class));

    /** The built-in commands with those of every {@link SubcommandProvider} on the classpath between the two groups. */
    private static List<Class<?>> subcommands(List<Class<?>> operating, List<Class<?>> tools) {
        List<Class<?>> all = new ArrayList<>(operating);
        for (SubcommandProvider provider : ServiceLoader.load(SubcommandProvider.class, McctlCommand.class.getClassLoader())) {
            all.addAll(provider.subcommands());
        }
        all.addAll(tools);
        return List.copyOf(all);
    }

    /**
     * The subcommands a run of {@code args} needs: the one its first word names, none for the version alone, and all
     * of them otherwise (help lists them, and an unknown word is answered with the closest names).
     */
    static List<Class<?>> subcommandsFor(String[] args) {
        boolean version = false;
        for (String arg : args) {
            if (arg.equals("-V") || arg.equals("--version")) {
                version = true;
            } else if (arg.equals("-h") || arg.equals("--help") || !arg.startsWith("-")) {
                if (arg.startsWith("-")) {
                    return SUBCOMMANDS;
                }
                for (Class<?> command : SUBCOMMANDS) {
                    if (command.getAnnotation(Command.class).name().equals(arg)) {
                        return List.of(command);
                    }
                }
                return SUBCOMMANDS;
            }
        }
        return version ? List.of() : SUBCOMMANDS;
    }

    @Option(names = {"-x", "--stacktrace"}, scope = ScopeType.INHERIT,
            description = "On error, print the stack trace as well as the one-line message.")
    boolean stacktrace;

    private final Map<String, String> environment;
    private final CommandTrees trees;

    McctlCommand(Map<String, String> environment, CommandTrees trees) {
        this.environment = Map.copyOf(environment);
        this.trees = trees;
    }

    @Override
    public CommandTrees trees() {
        return trees;
    }

    @Override
    public Map<String, String> environment() {
        return environment;
    }
}
