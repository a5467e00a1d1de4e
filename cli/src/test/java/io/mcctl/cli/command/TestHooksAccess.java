package io.mcctl.cli.command;

/** The names of the offload test hooks' environment variables, for the process tests. */
public final class TestHooksAccess {
    public static final String PAUSE_AFTER_ALLOCATE = TestHooks.PAUSE_AFTER_ALLOCATE;
    public static final String PAUSE_BEFORE_NOTIFY = TestHooks.PAUSE_BEFORE_NOTIFY;

    private TestHooksAccess() {
    }
}
