package io.mcctl.master.service;

/**
 * Whether a bucket's file is the one the master laid out, as the master last found it by a stat of the path. Allocation
 * skips a bucket that is not {@link #HEALTHY} (its keys spill to the next bucket with room); what is committed there is
 * left as it is, and reads of it fail their checksum or find no file, which is a miss.
 */
public enum BucketHealth {
    /** The file at the path is the one the master laid out (or adopted). */
    HEALTHY,
    /** No file at the path: deleted, or the shared filesystem lost it. */
    MISSING,
    /**
     * Another file at the path (another device or inode) than the one laid out: deleted and created again, or restored
     * from a copy. The master adopts it once it has stayed the same file, at least the bucket size long, over a whole
     * check interval.
     */
    REPLACED
}
