package io.mcctl.storage.layout;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Lays out a root: the layout record and every bucket file. Missing files are created and short ones
 * extended (ftruncate upwards, leaving a sparse tail); no file is ever truncated, shrunk or rewritten.
 */
public final class BucketFiles {

    /**
     * What {@link #initialise} did. {@code recreated}: the buckets whose files it created although the root had been laid
     * out before (its layout record was there): files deleted since, now empty.
     */
    public record InitResult(LayoutFile.Record layout, int created, int extended, int unchanged, java.util.List<Integer> recreated) {
    }

    private BucketFiles() {
    }

    public static InitResult initialise(BucketLayout layout) throws IOException {
        Files.createDirectories(layout.root());
        boolean laidOutBefore = Files.exists(layout.layoutFile());
        LayoutFile.Record record = LayoutFile.loadOrCreate(layout);
        java.util.List<Integer> recreated = new java.util.ArrayList<>();
        int created = 0;
        int extended = 0;
        int unchanged = 0;
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            Path path = layout.bucketPath(bucket);
            boolean existed = Files.exists(path);
            // "rw" opens with O_CREAT but never O_TRUNC; setLength only ever grows the file here.
            try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
                long length = file.length();
                if (length < layout.bucketSize()) {
                    file.setLength(layout.bucketSize());
                    if (existed) {
                        extended++;
                    } else {
                        created++;
                        if (laidOutBefore) {
                            recreated.add(bucket);
                        }
                    }
                } else {
                    unchanged++;
                }
            }
        }
        return new InitResult(record, created, extended, unchanged, java.util.List.copyOf(recreated));
    }

    /**
     * Extends every bucket file of {@code layout} that is shorter than its bucket size (ftruncate upwards: never
     * shorter, no byte changed) and fsyncs each, so that the new size is on disk before anything records it. A
     * file already that long or longer is left alone, so a grow that a crash interrupted can simply be run again.
     *
     * @param afterEach called with the number of files done so far after each file (a progress report, or a test's pause)
     * @return how many files were extended
     * @throws java.nio.file.NoSuchFileException when a bucket file is missing: a grow extends a laid-out root, it creates nothing
     */
    public static int extend(BucketLayout layout, java.util.function.IntConsumer afterEach) throws IOException {
        int extended = 0;
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            Path path = layout.bucketPath(bucket);
            if (!Files.exists(path)) {
                throw new java.nio.file.NoSuchFileException(path.toString(), null, "bucket file missing: a grow extends a laid-out root");
            }
            // "rw" never truncates; setLength only grows here, leaving a sparse tail; getFD().sync() makes the size durable.
            try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
                if (file.length() < layout.bucketSize()) {
                    file.setLength(layout.bucketSize());
                    file.getFD().sync();
                    extended++;
                }
            }
            afterEach.accept(bucket + 1);
        }
        return extended;
    }
}
