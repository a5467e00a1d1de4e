package io.mcctl.master.service;

import io.mcctl.master.proto.v1.WalRecord;

/**
 * Where the page service writes each state change, before the change can be seen through any answer:
 * the write-ahead log, or nowhere (snapshot durability, tests). Called with shard locks held, so an
 * implementation only buffers; durability is awaited by whoever answers the caller.
 */
@FunctionalInterface
public interface ChangeLog {

    ChangeLog NONE = change -> { };

    void record(WalRecord.Builder change);
}
