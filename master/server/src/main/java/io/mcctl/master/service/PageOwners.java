package io.mcctl.master.service;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Which committed mapping holds each page, so that an allocation making room can find the objects that lie in a run of
 * pages ({@link RoomSearch}): per bucket and page, the hash ({@link String#hashCode}) of the scoped key of the mapping
 * whose pages include it; 0 where no committed mapping is (free, in flight, quarantined), and for the rare key that
 * hashes to 0, whose pages are then never taken to make room. A hint, never the truth: a reader finds the mapping by the
 * hash under its shard's lock and checks that its pages are there ({@link MappingTable#findHolding}).
 *
 * <p>Written by {@link PageState#apply} while serving, under the mapping's shard lock, when a commit, a replacement or a
 * removal changes which pages a mapping holds: a page has one holder at a time, and the next holder's pages come to it
 * through its bucket's allocator monitor after the last one let them go, so two writers never write one slot unordered.
 * Recovery fills it once from every mapping ({@link #holdAll}). Read without a lock. Memory: 4 bytes a page, in chunks
 * of {@value #CHUNK_PAGES} pages made when a mapping first lands in one.
 */
final class PageOwners {

    static final int CHUNK_BITS = 12;
    static final int CHUNK_PAGES = 1 << CHUNK_BITS;

    /** Per bucket, its chunks (null until a mapping lands there). Replaced by larger ones by {@link #grow}. */
    private volatile AtomicReferenceArray<int[]>[] chunks;

    PageOwners(int bucketCount, long pagesPerBucket) {
        this.chunks = directories(bucketCount, pagesPerBucket, null);
    }

    @SuppressWarnings("unchecked")
    private static AtomicReferenceArray<int[]>[] directories(int bucketCount, long pagesPerBucket, AtomicReferenceArray<int[]>[] old) {
        int count = (int) ((pagesPerBucket + CHUNK_PAGES - 1) >>> CHUNK_BITS);
        AtomicReferenceArray<int[]>[] made = new AtomicReferenceArray[bucketCount];
        for (int b = 0; b < bucketCount; b++) {
            made[b] = new AtomicReferenceArray<>(count);
            for (int c = 0; old != null && c < old[b].length(); c++) {
                made[b].set(c, old[b].get(c));
            }
        }
        return made;
    }

    /**
     * Notes that the key of hash {@code hash} holds pages [firstPage, firstPage + pages) of {@code bucket}, or with 0
     * that no committed mapping does any more (noted before the pages can be another's).
     */
    void hold(int bucket, long firstPage, long pages, int hash) {
        AtomicReferenceArray<int[]> directory = chunks[bucket];
        long end = firstPage + pages;
        for (long page = firstPage; page < end; ) {
            int c = (int) (page >>> CHUNK_BITS);
            long chunkEnd = Math.min(end, (long) (c + 1) << CHUNK_BITS);
            int[] chunk = directory.get(c);
            if (chunk == null && hash != 0) {
                chunk = new int[CHUNK_PAGES];
                if (!directory.compareAndSet(c, null, chunk)) {
                    chunk = directory.get(c); // another shard's writer made it first
                }
            }
            if (chunk != null) {
                int base = c << CHUNK_BITS;
                Arrays.fill(chunk, (int) (page - base), (int) (chunkEnd - base), hash);
            }
            page = chunkEnd;
        }
    }

    /** The holders of pages [from, to) of {@code bucket}, page {@code from} first. */
    int[] read(int bucket, long from, long to) {
        AtomicReferenceArray<int[]> directory = chunks[bucket];
        int[] holders = new int[(int) (to - from)];
        for (long page = from; page < to; ) {
            int c = (int) (page >>> CHUNK_BITS);
            long chunkEnd = Math.min(to, (long) (c + 1) << CHUNK_BITS);
            int[] chunk = c < directory.length() ? directory.get(c) : null;
            if (chunk != null) {
                int base = c << CHUNK_BITS;
                System.arraycopy(chunk, (int) (page - base), holders, (int) (page - from), (int) (chunkEnd - page));
            }
            page = chunkEnd;
        }
        return holders;
    }

    /**
     * Makes room for buckets of {@code pagesPerBucket} pages and returns the chunks it replaced, for {@link #carryOver}
     * once every writer that may still write into them is done.
     */
    AtomicReferenceArray<int[]>[] grow(long pagesPerBucket) {
        AtomicReferenceArray<int[]>[] old = chunks;
        chunks = directories(old.length, pagesPerBucket, old);
        return old;
    }

    /** Carries over the chunks a writer made in {@code old} after {@link #grow} had copied it. */
    void carryOver(AtomicReferenceArray<int[]>[] old) {
        AtomicReferenceArray<int[]>[] current = chunks;
        for (int b = 0; b < old.length; b++) {
            for (int c = 0; c < old[b].length(); c++) {
                int[] chunk = old[b].get(c);
                if (chunk != null) {
                    current[b].compareAndSet(c, null, chunk);
                }
            }
        }
    }

    /** Notes every mapping of {@code table}, as recovery ends: nothing serves yet. */
    void holdAll(MappingTable table, long pageSize) {
        for (int m = 0; m < table.size(); m++) {
            long size = table.size(m);
            hold(table.bucket(m), table.offset(m) / pageSize, (size + pageSize - 1) / pageSize, table.hashOf(m));
        }
    }
}
