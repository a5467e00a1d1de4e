package io.mcctl.cli;

import java.util.List;

/**
 * Top-level commands that a module other than this one adds to {@code mcctl} (the benchmarks and demos, for example).
 * Each module names its provider in {@code META-INF/services/io.mcctl.cli.SubcommandProvider}; {@link Main} asks
 * {@link java.util.ServiceLoader} for them once per run. Help lists their commands after the ones that operate the
 * tier and before {@code shell}, {@code config} and {@code completion}.
 */
public interface SubcommandProvider {

    /**
     * The picocli command classes, in the order help lists them. Only their {@code @Command} names are read until one
     * of them runs, so a provider should name classes and do nothing else.
     */
    List<Class<?>> subcommands();
}
