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

    /** What {@link #initialise} did. */
    public record InitResult(LayoutFile.Record layout, int created, int extended, int unchanged) {
    }

    private BucketFiles() {
    }

    public static InitResult initialise(BucketLayout layout) throws IOException {
        Files.createDirectories(layout.root());
        LayoutFile.Record record = LayoutFile.loadOrCreate(layout);
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
                    }
                } else {
                    unchanged++;
                }
            }
        }
        return new InitResult(record, created, extended, unchanged);
    }
}
