package io.mcctl.master.service;

/**
 * Numbers the KV event batches of the log's group commits (docs/wire-protocol.md, "KV events"). The write-ahead log
 * calls it: {@link #appended} and {@link #seal} under its lock, so that a group's batches are exactly the announcing
 * records in it, in log order; {@link #durable} from its writer once the group is on disk (and, for a leader, its lease
 * still held), never for a group whose fsync failed.
 */
public interface KvEventBatcher {

    /** A record that announces a KV event for {@code tenant} was framed at {@code sequence}. */
    void appended(String tenant, long sequence);

    /** The group gathered so far is taken for writing: the record that closes it (numbering its batches), or null when none announces. */
    Change.EventsSealed seal();

    /** The group closed by {@code sealed}, logged at {@code sequence}, is durable. */
    void durable(Change.EventsSealed sealed, long sequence);
}
