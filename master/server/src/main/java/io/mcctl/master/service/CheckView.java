package io.mcctl.master.service;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.util.List;

/** What a page check ({@link PageChecker}) reads: the claims under their locks, the bitmaps, the clock; it changes no table. */
final class CheckView {

    private final PageState state;

    CheckView(PageState state) {
        this.state = state;
    }

    BucketLayout layout() {
        return state.layout;
    }

    BitmapPageAllocator[] allocators() {
        return state.space.allocators;
    }

    int shardCount() {
        return KeyTable.SHARDS;
    }

    KeyTable.Shard shard(int index) {
        return state.keys.shard(index);
    }

    java.util.concurrent.locks.ReentrantLock quarantineLock() {
        return state.quarantine.lock;
    }

    /** The quarantined ranges. Caller holds the quarantine lock. */
    List<Quarantine.Range> quarantinedRanges() {
        return state.quarantine.ranges();
    }

    long now() {
        return state.now();
    }

    boolean youngRegion(int bucket, int region, long nowNanos, long minAgeNanos) {
        return state.space.youngRegion(bucket, region, nowNanos, minAgeNanos);
    }
}
