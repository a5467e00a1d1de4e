package io.mcctl.master.service;

/**
 * Where the page service writes each change before it applies it: the write-ahead log, or nowhere (snapshot
 * durability, tests). Called with the key's shard lock held, so an implementation only buffers; durability is
 * awaited by whoever answers the caller.
 */
@FunctionalInterface
public interface ChangeLog {

    /** Records nothing. */
    ChangeLog NONE = change -> 0;

    /**
     * Takes {@code change} into the log, in order with every other change.
     *
     * @return its sequence in the log (1, 2, 3, ...), or 0 when this log records nothing
     * @throws Refused when the log takes no more changes (it failed); the caller then applies nothing
     */
    long append(Change change);

    /**
     * The sequence up to which the log holds every change durably: a change of a later sequence may yet be lost (it is
     * buffered, or the log failed before it reached the disk). Everything, for a log that records nothing.
     */
    default long durableSequence() {
        return Long.MAX_VALUE;
    }

    /** The log failed and takes no more changes: the master answers no mutation until it restarts. */
    final class Refused extends RuntimeException {
        public Refused(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
