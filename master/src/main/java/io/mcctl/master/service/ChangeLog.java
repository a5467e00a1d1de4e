package io.mcctl.master.service;

import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.Committed;
import io.mcctl.master.proto.v1.WalRecord;

/**
 * Where the page service writes each state change, before the change can be seen through any answer:
 * the write-ahead log, or nowhere (snapshot durability, tests). Called with shard locks held, so an
 * implementation only buffers; durability is awaited by whoever answers the caller.
 *
 * <p>Allocations and commits, two per offloaded object, come through methods of their own so that a log can
 * encode them straight from their fields; the defaults build the record, which any log can take.
 */
@FunctionalInterface
public interface ChangeLog {

    /** Records nothing, and builds nothing to record. */
    ChangeLog NONE = new ChangeLog() {
        @Override
        public void record(WalRecord.Builder change) {
        }

        @Override
        public void allocated(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite) {
        }

        @Override
        public void committed(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs) {
        }
    };

    void record(WalRecord.Builder change);

    /** An allocation handed out, its pages the writer's until {@code deadlineMs} (wall clock). */
    default void allocated(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite) {
        record(WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId(tenant).setKey(key)
                .setPlacement(PageService.record(placement)).setDeadlineMs(deadlineMs).setOverwrite(overwrite)));
    }

    /**
     * An allocation committed as the key's mapping; {@code replaced} is the mapping it took the place of, or null,
     * its pages freed at once ({@code replacedReleaseMs} 0) or quarantined until then.
     */
    default void committed(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs) {
        Committed.Builder change = Committed.newBuilder().setTenantId(tenant).setKey(key).setPlacement(PageService.record(placement));
        if (replaced != null) {
            change.setReplaced(PageService.record(replaced)).setReplacedReleaseMs(replacedReleaseMs);
        }
        record(WalRecord.newBuilder().setCommitted(change));
    }
}
