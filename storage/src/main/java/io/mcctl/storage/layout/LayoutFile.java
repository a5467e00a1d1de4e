package io.mcctl.storage.layout;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.mcctl.storage.io.DurableFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * {@code <root>/mooncake.layout.json}: the cluster id, format version, bucket count, page size and
 * bucket size that the bucket files at a root were laid out with. Written once by the first node (or
 * master) to initialise the root; every later node checks its settings against it.
 */
public final class LayoutFile {

    public static final String FILE_NAME = "mooncake.layout.json";
    public static final int FORMAT_VERSION = 1;

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    /** The record as stored. */
    public record Record(@JsonProperty("cluster_id") String clusterId,
                         @JsonProperty("format_version") int formatVersion,
                         @JsonProperty("bucket_count") int bucketCount,
                         @JsonProperty("page_size") long pageSize,
                         @JsonProperty("bucket_size") long bucketSize) {
    }

    private LayoutFile() {
    }

    public static Record read(Path file) throws IOException {
        try {
            return JSON.readValue(Files.readAllBytes(file), Record.class);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (IOException e) {
            throw new LayoutMismatchException(file + " cannot be read as a layout record: " + e.getMessage().lines().findFirst().orElse(""));
        }
    }

    /**
     * Reads the layout record at the root, or writes one for {@code layout} with a fresh cluster id if
     * there is none; then checks that the record matches {@code layout}.
     *
     * @return the record in force
     * @throws LayoutMismatchException naming every field that differs, with both values
     */
    public static Record loadOrCreate(BucketLayout layout) throws IOException {
        Path file = layout.layoutFile();
        if (!Files.exists(file)) {
            // Two nodes initialising an empty root at once: exactly one record wins, both then read it.
            Record fresh = new Record(UUID.randomUUID().toString(), FORMAT_VERSION, layout.bucketCount(), layout.pageSize(), layout.bucketSize());
            DurableFiles.createAtomically(file, JSON.writeValueAsBytes(fresh));
        }
        Record record = read(file);
        check(record, layout, file);
        return record;
    }

    /** Throws when {@code record} and {@code layout} disagree. */
    public static void check(Record record, BucketLayout layout, Path file) {
        if (record.formatVersion() != FORMAT_VERSION) {
            throw new LayoutMismatchException(file + " has layout format version " + record.formatVersion()
                    + "; this mcctl reads version " + FORMAT_VERSION);
        }
        List<String> differences = new ArrayList<>();
        if (record.bucketCount() != layout.bucketCount()) {
            differences.add("bucket_count is " + layout.bucketCount() + " here but " + record.bucketCount() + " in the layout");
        }
        if (record.pageSize() != layout.pageSize()) {
            differences.add("page_size is " + layout.pageSize() + " here but " + record.pageSize() + " in the layout");
        }
        if (record.bucketSize() != layout.bucketSize()) {
            differences.add("bucket_size is " + layout.bucketSize() + " here but " + record.bucketSize() + " in the layout");
        }
        if (!differences.isEmpty()) {
            throw new LayoutMismatchException("settings disagree with " + file + ": " + String.join("; ", differences)
                    + " (use the cluster's settings, or another root)");
        }
    }

    /**
     * Replaces the record at {@code file} with {@code record} atomically (temp file, fsync, rename, fsync of the
     * directory): a crash leaves the old record or the new one, never a mix. For a grown bucket size only.
     */
    public static void rewrite(Path file, Record record) throws IOException {
        DurableFiles.writeAtomically(file, JSON.writeValueAsBytes(record));
    }

    /** The same record with another bucket size. */
    public static Record withBucketSize(Record record, long bucketSize) {
        return new Record(record.clusterId(), record.formatVersion(), record.bucketCount(), record.pageSize(), bucketSize);
    }
}
