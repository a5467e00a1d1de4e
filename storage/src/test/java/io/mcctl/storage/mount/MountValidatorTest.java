package io.mcctl.storage.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class MountValidatorTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private BucketLayout small(Path root) {
        return new BucketLayout(root, 4, 4096, 1 << 20);
    }

    private static CheckResult check(List<CheckResult> results, String name) {
        return results.stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow(() -> new AssertionError("no " + name));
    }

    private static List<CheckResult> validate(BucketLayout layout) {
        return MountValidator.validate(layout, "posix", Optional.empty(), TIMEOUT);
    }

    @Test
    void a_laid_out_root_passes_every_check_and_leaves_no_probe_file() throws IOException {
        BucketLayout layout = small(dir.resolve("root"));
        BucketFiles.initialise(layout);
        List<CheckResult> results = validate(layout);
        assertEquals(List.of(MountValidator.ROOT, MountValidator.FILESYSTEM, MountValidator.THREEFS_VIRT, MountValidator.STAT,
                MountValidator.CAPACITY, MountValidator.LAYOUT, MountValidator.BUCKET_FILES, MountValidator.OPEN_FILES,
                MountValidator.WRITE_PROBE), results.stream().map(CheckResult::name).toList());
        assertTrue(MountValidator.fit(results), results::toString);
        for (String name : List.of(MountValidator.ROOT, MountValidator.STAT, MountValidator.CAPACITY, MountValidator.LAYOUT,
                MountValidator.BUCKET_FILES, MountValidator.WRITE_PROBE)) {
            assertEquals(CheckResult.Status.PASS, check(results, name).status(), () -> results.toString());
        }
        assertEquals(CheckResult.Status.SKIP, check(results, MountValidator.THREEFS_VIRT).status());
        assertEquals(PROBE_SIZE, check(results, MountValidator.WRITE_PROBE).measured().get("bytes"));
        try (Stream<Path> files = Files.list(layout.root())) {
            assertTrue(files.noneMatch(p -> p.getFileName().toString().startsWith(MountValidator.PROBE_PREFIX)));
        }
    }

    private static final Object PROBE_SIZE = MountValidator.PROBE_BYTES;

    @Test
    void a_short_bucket_file_fails_naming_it() throws IOException {
        BucketLayout layout = small(dir.resolve("root"));
        BucketFiles.initialise(layout);
        try (RandomAccessFile file = new RandomAccessFile(layout.bucketPath(2).toFile(), "rw")) {
            file.setLength(4096);
        }
        CheckResult buckets = check(validate(layout), MountValidator.BUCKET_FILES);
        assertEquals(CheckResult.Status.FAIL, buckets.status());
        assertTrue(buckets.detail().contains("bucket_02.data is 4096 bytes"), buckets.detail());
        assertEquals(1, buckets.measured().get("short"));
    }

    @Test
    void missing_bucket_files_fail_with_a_count_and_at_most_five_names() throws IOException {
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 8, 4096, 8192);
        BucketFiles.initialise(layout);
        for (int bucket = 1; bucket < 8; bucket++) {
            Files.delete(layout.bucketPath(bucket));
        }
        CheckResult buckets = check(validate(layout), MountValidator.BUCKET_FILES);
        assertEquals(CheckResult.Status.FAIL, buckets.status());
        assertTrue(buckets.detail().contains("7 of 8 missing: bucket_01.data, bucket_02.data, bucket_03.data, bucket_04.data, "
                + "bucket_05.data and 2 more"), buckets.detail());
    }

    @Test
    void an_empty_root_only_warns_since_the_first_master_start_lays_it_out() throws IOException {
        BucketLayout layout = small(dir);
        List<CheckResult> results = validate(layout);
        assertEquals(CheckResult.Status.WARN, check(results, MountValidator.LAYOUT).status());
        assertEquals(CheckResult.Status.WARN, check(results, MountValidator.BUCKET_FILES).status());
        assertTrue(MountValidator.fit(results), results::toString);
    }

    @Test
    void settings_that_differ_from_the_layout_record_fail_naming_both_values() throws IOException {
        BucketFiles.initialise(small(dir));
        BucketLayout other = new BucketLayout(dir, 4, 8192, 1 << 20);
        CheckResult layoutCheck = check(validate(other), MountValidator.LAYOUT);
        assertEquals(CheckResult.Status.FAIL, layoutCheck.status());
        assertTrue(layoutCheck.detail().contains("page_size is 8192 here but 4096 in the layout"), layoutCheck.detail());
    }

    @Test
    void another_clusters_layout_fails_naming_both_cluster_ids() throws IOException {
        BucketLayout layout = small(dir.resolve("root"));
        String here = BucketFiles.initialise(layout).layout().clusterId();
        ExpectedLayout master = new ExpectedLayout("/elsewhere", 4, 4096, 1 << 20, "the-masters-cluster", "posix");
        CheckResult layoutCheck = check(MountValidator.validate(layout, "posix", Optional.of(master), TIMEOUT), MountValidator.LAYOUT);
        assertEquals(CheckResult.Status.FAIL, layoutCheck.status());
        assertTrue(layoutCheck.detail().contains("this node mounted another cluster: cluster_id is " + here), layoutCheck.detail());
        assertTrue(layoutCheck.detail().contains("the-masters-cluster at the master"), layoutCheck.detail());
        assertTrue(layoutCheck.detail().contains("root_dir is " + layout.root() + " here but /elsewhere at the master"), layoutCheck.detail());
    }

    @Test
    void the_same_cluster_at_the_same_path_passes() throws IOException {
        BucketLayout layout = small(dir);
        LayoutFile.Record record = BucketFiles.initialise(layout).layout();
        ExpectedLayout master = new ExpectedLayout(layout.root().toString(), 4, 4096, 1 << 20, record.clusterId(), "posix");
        CheckResult layoutCheck = check(MountValidator.validate(layout, "posix", Optional.of(master), TIMEOUT), MountValidator.LAYOUT);
        assertEquals(CheckResult.Status.PASS, layoutCheck.status(), layoutCheck.detail());
    }

    @Test
    void a_root_that_does_not_exist_fails_and_skips_the_rest() {
        List<CheckResult> results = validate(small(dir.resolve("absent")));
        assertEquals(CheckResult.Status.FAIL, results.get(0).status());
        assertTrue(results.get(0).detail().contains("does not exist"), results.get(0).detail());
        assertEquals(9, results.size());
        assertTrue(results.subList(1, 9).stream().allMatch(r -> r.status() == CheckResult.Status.SKIP), results::toString);
        assertFalse(MountValidator.fit(results));
    }

    @Test
    void a_root_that_is_a_file_fails() throws IOException {
        Path file = Files.createFile(dir.resolve("plain"));
        CheckResult root = validate(small(file)).get(0);
        assertEquals(CheckResult.Status.FAIL, root.status());
        assertTrue(root.detail().contains("is not a directory"), root.detail());
    }

    @Test
    void a_read_only_root_fails_the_write_probe() throws IOException {
        BucketLayout layout = small(dir.resolve("root"));
        BucketFiles.initialise(layout);
        Files.setPosixFilePermissions(layout.root(), PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            Assumptions.assumeFalse(Files.isWritable(layout.root()),
                    "running as root: a 555 directory stays writable, so the probe cannot be refused");
            List<CheckResult> results = validate(layout);
            CheckResult probe = check(results, MountValidator.WRITE_PROBE);
            assertEquals(CheckResult.Status.FAIL, probe.status());
            assertTrue(probe.detail().contains("permission denied"), probe.detail());
        } finally {
            Files.setPosixFilePermissions(layout.root(), PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void an_hf3fs_setting_on_another_filesystem_warns() throws IOException {
        BucketLayout layout = small(dir);
        BucketFiles.initialise(layout);
        List<CheckResult> results = MountValidator.validate(layout, "hf3fs", Optional.empty(), TIMEOUT);
        CheckResult fs = check(results, MountValidator.FILESYSTEM);
        Assumptions.assumeTrue(fs.status() != CheckResult.Status.SKIP, "no readable mountinfo here");
        Assumptions.assumeFalse("fuse.hf3fs".equals(fs.measured().get("fs_type")), "the temp dir is on 3FS");
        assertEquals(CheckResult.Status.WARN, fs.status(), fs.detail());
        assertEquals(CheckResult.Status.WARN, check(results, MountValidator.THREEFS_VIRT).status());
    }

    @Test
    void unreadable_proc_files_skip_their_checks() throws IOException {
        BucketLayout layout = small(dir);
        BucketFiles.initialise(layout);
        List<CheckResult> results = new MountValidator(layout, "posix", Optional.empty(), TIMEOUT, dir.resolve("no-mountinfo"),
                dir.resolve("no-limits")).run();
        assertEquals(CheckResult.Status.SKIP, check(results, MountValidator.FILESYSTEM).status());
        assertEquals(CheckResult.Status.SKIP, check(results, MountValidator.OPEN_FILES).status());
    }

    @Test
    void a_low_open_file_limit_warns() throws IOException {
        BucketLayout layout = small(dir.resolve("root"));
        BucketFiles.initialise(layout);
        Path limits = Files.writeString(dir.resolve("limits"), "Max open files            32                   4096                 files\n");
        CheckResult open = check(new MountValidator(layout, "posix", Optional.empty(), TIMEOUT, Path.of(MountInfo.DEFAULT_FILE),
                limits).run(), MountValidator.OPEN_FILES);
        assertEquals(CheckResult.Status.WARN, open.status());
        assertEquals(68L, open.measured().get("needed"));
    }
}
