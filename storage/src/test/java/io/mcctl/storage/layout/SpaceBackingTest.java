package io.mcctl.storage.layout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.mount.CheckResult;
import io.mcctl.storage.mount.MountValidator;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
class SpaceBackingTest {

    static final long PAGE = 4096;

    @TempDir
    Path root;

    @Test
    void a_sparse_layout_larger_than_the_free_space_is_warned_about_saying_what_backs_it() throws Exception {
        long free = Files.getFileStore(root).getUsableSpace();
        long bucketSize = (free / 2 / PAGE + 1) * PAGE; // four of them: twice what the filesystem has free
        BucketLayout layout = new BucketLayout(root, 4, PAGE, bucketSize);
        BucketFiles.initialise(layout);

        SpaceBacking space = SpaceBacking.measure(layout);
        assertTrue(space.allocatedKnown());
        assertTrue(space.allocatedBytes() < 1 << 20, "sparse files hold (almost) no blocks: " + space);
        String warning = space.warning(layout).orElseThrow();
        assertTrue(warning.startsWith("the root " + root + " lays out 4 x " + SpaceBacking.bytes(bucketSize) + " = "
                + SpaceBacking.bytes(4 * bucketSize) + " of bucket files but the filesystem has "), warning);
        assertTrue(warning.contains("the files are sparse (") && warning.contains(" backed by real space so far)")
                && warning.contains(" cannot be written when the tier fills"), warning);

        CheckResult capacity = MountValidator.validate(layout, "posix", Optional.empty(), Duration.ofSeconds(30)).stream()
                .filter(r -> r.name().equals("capacity")).findFirst().orElseThrow();
        assertEquals(CheckResult.Status.WARN, capacity.status(), capacity.toString());
        assertEquals(warning.substring(0, 40), capacity.detail().substring(0, 40));
    }

    @Test
    void preallocating_backs_every_bucket_file_with_real_space_and_changes_no_byte() throws Exception {
        BucketLayout layout = new BucketLayout(root, 4, PAGE, 256 * PAGE);
        BucketFiles.initialise(layout);
        byte[] written = "bytes that were there before".getBytes();
        try (FileChannel channel = FileChannel.open(layout.bucketPath(2), StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(written), 5 * PAGE);
        }
        assertTrue(SpaceBacking.measure(layout).unbackedBytes() > 0);

        SpaceBacking.preallocate(layout);

        SpaceBacking space = SpaceBacking.measure(layout);
        assertEquals(0, space.unbackedBytes(), space.toString());
        assertEquals(Optional.empty(), space.warning(layout));
        for (int bucket = 0; bucket < 4; bucket++) {
            assertEquals(256 * PAGE, Files.size(layout.bucketPath(bucket)), "the size does not change");
        }
        byte[] back = new byte[written.length];
        try (FileChannel channel = FileChannel.open(layout.bucketPath(2), StandardOpenOption.READ)) {
            channel.read(ByteBuffer.wrap(back), 5 * PAGE);
        }
        assertArrayEquals(written, back);
    }
}
