package io.mcctl.storage.alloc;

/**
 * The fragmentation score of a set of free runs, defined as Ceph BlueStore's
 * {@code Allocator::get_fragmentation_score} defines it (src/os/bluestore/Allocator.cc): each run is
 * worth more than its length, by a factor that grows 1.1x with every doubling of length (linearly
 * interpolated between powers of two); the score places the actual total worth between the worth of
 * one run holding all free pages (score 0) and the worth of the same pages as single-page runs (score 1).
 *
 * <p>Not thread-safe: one instance per computation.
 */
public final class FragmentationScore {

    /** How much more one run of 2X pages is worth than two runs of X pages. */
    private static final double DOUBLING_WORTH = 1.1;

    private double worthSum;
    private long freePages;

    public void addFreeRun(long length) {
        if (length < 1) {
            throw new IllegalArgumentException("free run length " + length + " must be at least 1");
        }
        worthSum += worth(length);
        freePages += length;
    }

    /** The score in [0, 1]; 0 when there is no free space or one run holds it all. */
    public double score() {
        if (freePages <= 1) {
            return 0.0;
        }
        double ideal = worth(freePages);
        double worst = freePages * worth(1);
        double score = (ideal - worthSum) / (ideal - worst);
        return Math.max(0.0, Math.min(1.0, score));
    }

    static double worth(long length) {
        int grade = 63 - Long.numberOfLeadingZeros(length);
        double low = (double) (1L << grade);
        double within = (length - low) / low; // position inside [2^grade, 2^(grade+1)), in [0, 1)
        return low * Math.pow(DOUBLING_WORTH, grade) * (1 - within)
                + 2 * low * Math.pow(DOUBLING_WORTH, grade + 1) * within;
    }
}
