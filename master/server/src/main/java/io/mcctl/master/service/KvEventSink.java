package io.mcctl.master.service;

/**
 * Receives each logged change that announces a KV event (a commit or removal of an object with engine block hashes),
 * with its log sequence, right after the change is applied: under the key's shard lock, so an implementation only
 * queues (never blocks, never waits for the log). Replay never calls it.
 */
@FunctionalInterface
public interface KvEventSink {

    KvEventSink NONE = (change, sequence) -> { };

    void changed(Change change, long sequence);
}
