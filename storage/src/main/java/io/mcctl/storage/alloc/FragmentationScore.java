package io.mcctl.storage.alloc;

/**
 * The fragmentation score of a set of free runs, as Ceph BlueStore defines it in
 * {@code Allocator::get_fragmentation_score} (src/os/bluestore/Allocator.cc, current form):
 * a free extent is worth more than its bytes, by a factor of 1.2 for every doubling of its length up to
 * 1 MiB, a factor that falls linearly to 1 between 1 MiB and 128 MiB, and 1 beyond (extents that large
 * serve any request); lengths between powers of two are interpolated linearly. The score places the
 * actual total worth between the worth of one extent holding all free space (score 0) and the worth of
 * the same space as single units (score 1).
 *
 * <p>Not thread-safe: one instance per computation.
 */
public final class FragmentationScore {

    private static final double SMALL_DOUBLING_WORTH = 1.2;
    private static final int SMALL_LOG2 = 20;  // 1 MiB
    private static final int HUGE_LOG2 = 27;   // 128 MiB
    private static final double[] SCALES = new double[66];

    static {
        SCALES[0] = 1;
        for (int grade = 1; grade < SCALES.length; grade++) {
            double factor;
            if (grade >= HUGE_LOG2) {
                factor = 1;
            } else if (grade > SMALL_LOG2) {
                factor = ((grade - SMALL_LOG2) + SMALL_DOUBLING_WORTH * (HUGE_LOG2 - grade)) / (HUGE_LOG2 - SMALL_LOG2);
            } else {
                factor = SMALL_DOUBLING_WORTH;
            }
            SCALES[grade] = SCALES[grade - 1] * factor;
        }
    }

    private final long unitBytes;
    private double worthSum;
    private long freeUnits;

    /** @param unitBytes bytes per unit of run length (the page size, for page runs) */
    public FragmentationScore(long unitBytes) {
        if (unitBytes < 1 || Long.bitCount(unitBytes) != 1) {
            throw new IllegalArgumentException("unit of " + unitBytes + " bytes must be a power of two");
        }
        this.unitBytes = unitBytes;
    }

    /** Run lengths in bytes. */
    public FragmentationScore() {
        this(1);
    }

    /** Adds one free run of {@code length} units. */
    public void addFreeRun(long length) {
        if (length < 1) {
            throw new IllegalArgumentException("free run length " + length + " must be at least 1");
        }
        worthSum += worth(length * unitBytes);
        freeUnits += length;
    }

    /** The score in [0, 1]; 0 when there is no free space or one run holds it all. */
    public double score() {
        if (freeUnits <= 1) {
            return 0.0;
        }
        double ideal = worth(freeUnits * unitBytes);
        double worst = freeUnits * worth(unitBytes);
        if (ideal <= worst) {
            return 0.0; // all extents past the size where fragmentation matters
        }
        double score = (ideal - worthSum) / (ideal - worst);
        return Math.max(0.0, Math.min(1.0, score));
    }

    /** Worth of one extent of {@code bytes}. */
    static double worth(long bytes) {
        int grade = 63 - Long.numberOfLeadingZeros(bytes);
        double low = (double) (1L << grade);
        double within = (bytes - low) / low; // position inside [2^grade, 2^(grade+1)), in [0, 1)
        return low * SCALES[grade] * (1 - within) + 2 * low * SCALES[grade + 1] * within;
    }
}
