package io.mcctl.tools.bitmap;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.FreeRunSource;

/**
 * One bucket's page bitmap as a value: 64-bit words, bit {@code i % 64} of word {@code i / 64} set when
 * page {@code i} is allocated; bits past {@link #pageCount()} are ignored. Read from a live master
 * ({@code GetBucketBitmap}) or rebuilt from saved state, it lists its free runs the way the allocator does.
 *
 * <p>Immutable after construction (the words are copied in), hence thread-safe.
 */
public final class BucketBitmap implements FreeRunSource {

    private final long pageCount;
    private final long[] words;

    public BucketBitmap(long pageCount, long[] words) {
        if (pageCount < 0 || (pageCount + 63) / 64 > words.length) {
            throw new IllegalArgumentException(words.length + " bitmap words cannot hold " + pageCount + " pages");
        }
        this.pageCount = pageCount;
        this.words = words.clone();
        // Pages past the end count as allocated, so no free run reaches them.
        for (int w = (int) (pageCount >>> 6); w < this.words.length; w++) {
            long bits = Math.max(0, Math.min(64, pageCount - (long) w * 64));
            this.words[w] |= bits == 64 ? 0 : -1L << bits;
        }
    }

    /** A copy of an allocator's bitmap as it stands. */
    public static BucketBitmap of(BitmapPageAllocator allocator) {
        return new BucketBitmap(allocator.pageCount(), allocator.bitmapWords());
    }

    @Override
    public long pageCount() {
        return pageCount;
    }

    /** Pages whose bit is set. */
    public long allocatedPages() {
        long set = 0;
        for (long word : words) {
            set += Long.bitCount(word);
        }
        return set - ((long) words.length * 64 - pageCount); // the padding past the end is set
    }

    /** First page of the first free run of at least {@code pages} pages, or -1 when none fits. */
    public long firstFit(long pages) {
        if (pages < 1) {
            throw new IllegalArgumentException("run of " + pages + " pages: must be at least 1");
        }
        long[] found = {-1};
        forEachFreeRun((first, length) -> {
            if (found[0] < 0 && length >= pages) {
                found[0] = first;
            }
        });
        return found[0];
    }

    @Override
    public void forEachFreeRun(FreeRunConsumer consumer) {
        long runStart = -1;
        for (int w = 0; w < words.length; w++) {
            long word = words[w];
            if (word == 0) {
                if (runStart < 0) {
                    runStart = (long) w * 64;
                }
                continue;
            }
            if (word == -1L) {
                if (runStart >= 0) {
                    consumer.accept(runStart, (long) w * 64 - runStart);
                    runStart = -1;
                }
                continue;
            }
            int bit = 0;
            while (bit < 64) {
                long rest = word >>> bit;
                if (runStart < 0) {
                    // Skip allocated bits; what is left of the word may be all free (rest's high bits read as 0).
                    int allocatedBits = Long.numberOfTrailingZeros(~rest);
                    bit += allocatedBits;
                    if (bit >= 64) {
                        break;
                    }
                    runStart = (long) w * 64 + bit;
                    rest = word >>> bit;
                }
                int freeBits = rest == 0 ? 64 - bit : Long.numberOfTrailingZeros(rest);
                bit += freeBits;
                if (bit < 64) {
                    consumer.accept(runStart, (long) w * 64 + bit - runStart);
                    runStart = -1;
                }
            }
        }
        if (runStart >= 0) {
            consumer.accept(runStart, pageCount - runStart);
        }
    }
}
