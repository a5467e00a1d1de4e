package io.mcctl.cli.bench;

import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;

/** Heap the master holds per live mapping: committed mappings made in a page service, heap measured after GC. */
public final class MappingMemory {

    /** Bytes per mapping, and the key length used. */
    public record Figure(long mappings, int keyLength, long heapBytes, double bytesPerMapping) {
    }

    private MappingMemory() {
    }

    public static Figure measure(int mappings, int keyLength) {
        BucketLayout layout = new BucketLayout(Path.of("/nonexistent-bench-root"), 256, 64 << 10, 4L << 30);
        long before = usedAfterGc();
        PageService pages = PageService.builder(layout).allocationDeadline(Duration.ofMinutes(10)).readLease(Duration.ofSeconds(5)).build();
        long empty = usedAfterGc();
        StringBuilder pad = new StringBuilder();
        while (pad.length() < keyLength - 10) {
            pad.append('k');
        }
        for (int i = 0; i < mappings; i++) {
            String key = pad + String.format("%010d", i);
            Result<Placement> placement = pages.allocate("bench", key, 64 << 10, false);
            pages.notifySuccess("bench", key, placement.value().withCrc(i));
        }
        long full = usedAfterGc();
        if (pages.mappingCount() != mappings) {
            throw new IllegalStateException("expected " + mappings + " mappings, have " + pages.mappingCount());
        }
        long delta = full - empty;
        // Keep the service reachable until the heap was measured.
        if (pages.stats().mappings() < 0 || before < 0) {
            throw new IllegalStateException();
        }
        return new Figure(mappings, keyLength, delta, (double) delta / mappings);
    }

    private static long usedAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
