package io.mcctl.storage.mount;

import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.BucketIo;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.IoMode;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.SpaceBacking;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Checks that this node's mount of the root is fit to join the tier, before it joins: the root, the
 * filesystem under it, the layout record, the bucket files, the open-file limit and a write probe.
 *
 * <p>Every check that touches the root runs on its own daemon thread and is waited for at most the
 * timeout, so a hung FUSE mount yields a FAIL instead of a hung tool; after a check times out, the later
 * checks that need the root are skipped. Checks that visit every bucket file get the timeout once per 256
 * buckets. Not thread-safe; one validator per call of {@link #validate}.
 */
public final class MountValidator {

    public static final String ROOT = "root";
    public static final String FILESYSTEM = "filesystem";
    public static final String THREEFS_VIRT = "3fs-virt";
    public static final String STAT = "stat";
    public static final String CAPACITY = "capacity";
    public static final String LAYOUT = "layout";
    public static final String BUCKET_FILES = "bucket-files";
    public static final String OPEN_FILES = "open-files";
    public static final String WRITE_PROBE = "write-probe";
    public static final String IO = "io";

    /** The filesystem type 3FS's FUSE client mounts with. */
    public static final String HF3FS_MOUNT_TYPE = "fuse.hf3fs";
    public static final String PROBE_PREFIX = ".mcctl-probe-";
    public static final int PROBE_BYTES = 4 << 20;
    /** Descriptors beyond one per bucket file: sockets, logs, the WAL, the JVM's own. */
    public static final int FD_HEADROOM = 64;

    private static final int LISTED = 5;
    private static final int BUCKETS_PER_TIMEOUT = 256;

    private final BucketLayout layout;
    private final String fsType;
    private final Optional<ExpectedLayout> expected;
    private final Duration timeout;
    private final Path mountInfoFile;
    private final Path limitsFile;

    // Written by a check's thread, read after that check's FutureTask.get, which orders the two.
    private volatile MountInfo.Mount mount;
    private volatile boolean layoutRecordAbsent;

    MountValidator(BucketLayout layout, String fsType, Optional<ExpectedLayout> expected, Duration timeout, Path mountInfoFile,
                   Path limitsFile) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout " + timeout + " is not positive");
        }
        this.layout = layout;
        this.fsType = fsType;
        this.expected = expected;
        this.timeout = timeout;
        this.mountInfoFile = mountInfoFile;
        this.limitsFile = limitsFile;
    }

    /**
     * Runs every check, in order, against the root of {@code layout}.
     *
     * @param fsType   the fs_type setting: {@code posix} or {@code hf3fs}
     * @param expected the cluster's layout as its master reports it, to compare with; empty to skip that part
     * @param timeout  how long any one check may take before it counts as hung
     */
    public static List<CheckResult> validate(BucketLayout layout, String fsType, Optional<ExpectedLayout> expected, Duration timeout) {
        return new MountValidator(layout, fsType, expected, timeout, Path.of(MountInfo.DEFAULT_FILE), Path.of("/proc/self/limits")).run();
    }

    /**
     * Which bucket-file IO the io setting gives for {@code root} on this machine, and why: PASS with the choice's reason
     * (for USRBIO once a ring was made and given back); FAIL when io is usrbio and USRBIO cannot be used here (the one
     * line naming what is missing), or its ring cannot be made; WARN when io is auto on fs_type hf3fs but falls back to
     * POSIX, whose reads and writes then go through FUSE.
     */
    public static CheckResult ioCheck(BucketIoSelector.Wanted wanted, String fsType, Path root) {
        BucketIoSelector.Choice choice;
        try {
            choice = wanted.choose(fsType, root);
        } catch (UsrbioUnavailableException e) {
            return CheckResult.fail(IO, e.getMessage(), Map.of("io", wanted.mode().text()));
        }
        Map<String, Object> measured = Map.of("io", choice.mode().text());
        if (choice.mode() == IoMode.USRBIO) {
            try (BucketIo io = choice.open(false)) {
                return CheckResult.pass(IO, choice.reason() + "; a ring was made", measured);
            } catch (IOException e) {
                return CheckResult.fail(IO, e.getMessage(), measured);
            }
        }
        if ("hf3fs".equals(fsType) && wanted.mode() == IoMode.AUTO) {
            return CheckResult.warn(IO, choice.reason() + ": reads and writes go through FUSE", measured);
        }
        return CheckResult.pass(IO, choice.reason(), measured);
    }

    /** True when no check failed. */
    public static boolean fit(List<CheckResult> results) {
        return results.stream().noneMatch(CheckResult::failed);
    }

    List<CheckResult> run() {
        List<CheckResult> results = new ArrayList<>();
        Path root = layout.root();
        CheckResult rootCheck = guarded(ROOT, "the root " + root, timeout, this::checkRoot);
        results.add(rootCheck);
        String skip = rootCheck.status() == CheckResult.Status.PASS ? null : "needs the root, which " + ROOT + " failed";
        Duration perBuckets = timeout.multipliedBy((layout.bucketCount() + BUCKETS_PER_TIMEOUT - 1) / BUCKETS_PER_TIMEOUT);
        List<Step> steps = List.of(
                new Step(FILESYSTEM, "resolving " + root, timeout, this::checkFilesystem),
                new Step(THREEFS_VIRT, "the 3fs-virt lookup", timeout, this::checkThreeFsVirt),
                new Step(STAT, "stat of " + root, timeout, this::checkStat),
                new Step(CAPACITY, "the capacity check", perBuckets, this::checkCapacity),
                new Step(LAYOUT, "reading " + layout.layoutFile(), timeout, this::checkLayout),
                new Step(BUCKET_FILES, "the bucket file check", perBuckets, this::checkBucketFiles),
                new Step(OPEN_FILES, "reading " + limitsFile, timeout, this::checkOpenFiles),
                new Step(WRITE_PROBE, "the write probe", timeout, this::checkWriteProbe));
        for (Step step : steps) {
            if (skip != null) {
                results.add(CheckResult.skip(step.name, skip));
                continue;
            }
            CheckResult result = guarded(step.name, step.what, step.timeout, step.check);
            results.add(result);
            if (result.measured().containsKey("timed_out")) {
                skip = "skipped after " + step.name + " timed out";
            }
        }
        return results;
    }

    private record Step(String name, String what, Duration timeout, Callable<CheckResult> check) {
    }

    /** Runs {@code check} on a daemon thread; a check still running after {@code limit} is left behind and FAILs. */
    private static CheckResult guarded(String name, String what, Duration limit, Callable<CheckResult> check) {
        FutureTask<CheckResult> task = new FutureTask<>(check);
        Thread thread = new Thread(task, "mcctl-mount-" + name);
        thread.setDaemon(true);
        thread.start();
        try {
            return task.get(limit.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            Map<String, Object> measured = new LinkedHashMap<>();
            measured.put("timed_out", true);
            measured.put("timeout_ms", limit.toMillis());
            return CheckResult.fail(name, what + " did not answer within " + describe(limit) + ": the mount may be hung", measured);
        } catch (ExecutionException e) {
            return CheckResult.fail(name, what + " failed: " + reason(e.getCause()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CheckResult.fail(name, "interrupted");
        }
    }

    private CheckResult checkRoot() {
        Path root = layout.root();
        Map<String, Object> measured = Map.of("root", root.toString());
        if (Files.isDirectory(root)) {
            return CheckResult.pass(ROOT, root + " is a directory", measured);
        }
        if (Files.exists(root)) {
            return CheckResult.fail(ROOT, root + " exists but is not a directory", measured);
        }
        return CheckResult.fail(ROOT, root + " does not exist (mount the shared filesystem, or set --root)", measured);
    }

    private CheckResult checkFilesystem() throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(mountInfoFile);
        } catch (IOException e) {
            return CheckResult.skip(FILESYSTEM, "cannot read " + mountInfoFile + ": " + reason(e));
        }
        Path real = layout.root().toRealPath();
        Optional<MountInfo.Mount> found = MountInfo.mountOf(MountInfo.parse(lines), real);
        if (found.isEmpty()) {
            return CheckResult.skip(FILESYSTEM, "no mount in " + mountInfoFile + " holds " + real);
        }
        MountInfo.Mount m = found.get();
        mount = m;
        boolean threeFs = HF3FS_MOUNT_TYPE.equals(m.fsType());
        Map<String, Object> measured = new LinkedHashMap<>();
        measured.put("fs_type", m.fsType());
        measured.put("mount_point", m.mountPoint());
        measured.put("source", m.source());
        measured.put("real_path", real.toString());
        measured.put("is_3fs", threeFs);
        String where = m.fsType() + " mounted at " + m.mountPoint() + (threeFs ? " (3FS)" : "");
        if ("hf3fs".equals(fsType) && !threeFs) {
            return CheckResult.warn(FILESYSTEM, "fs_type is hf3fs but the root is on " + where + ", not " + HF3FS_MOUNT_TYPE, measured);
        }
        return CheckResult.pass(FILESYSTEM, where, measured);
    }

    private CheckResult checkThreeFsVirt() {
        if (!"hf3fs".equals(fsType)) {
            return CheckResult.skip(THREEFS_VIRT, "fs_type is " + fsType);
        }
        MountInfo.Mount m = mount;
        if (m == null) {
            return CheckResult.skip(THREEFS_VIRT, "the mount point of the root is not known");
        }
        Path virt = Path.of(m.mountPoint()).resolve("3fs-virt");
        Map<String, Object> measured = Map.of("path", virt.toString());
        if (Files.isDirectory(virt)) {
            return CheckResult.pass(THREEFS_VIRT, virt + " is present", measured);
        }
        return CheckResult.warn(THREEFS_VIRT, "no " + virt + ": not a 3FS FUSE mount, or a client without USRBIO support", measured);
    }

    private CheckResult checkStat() throws IOException {
        long start = System.nanoTime();
        Files.readAttributes(layout.root(), BasicFileAttributes.class);
        double millis = (System.nanoTime() - start) / 1e6;
        Map<String, Object> measured = Map.of("latency_ms", round(millis));
        return CheckResult.pass(STAT, String.format(Locale.ROOT, "answered in %.2f ms", millis), measured);
    }

    private CheckResult checkCapacity() throws IOException {
        long total = Files.getFileStore(layout.root()).getTotalSpace();
        SpaceBacking space = SpaceBacking.measure(layout);
        long required = space.capacityBytes();
        Map<String, Object> measured = new LinkedHashMap<>();
        measured.put("total_bytes", total);
        measured.put("free_bytes", space.freeBytes());
        measured.put("required_bytes", required);
        measured.put("allocated_bytes", space.allocatedBytes());
        measured.put("still_needed_bytes", space.unbackedBytes());
        measured.put("allocated_size_known", space.allocatedKnown());
        String need = layout.bucketCount() + " x " + bytes(layout.bucketSize()) + " = " + bytes(required);
        if (total < required) {
            return CheckResult.fail(CAPACITY, "the filesystem holds " + bytes(total) + " in total, less than the " + need
                    + " the bucket files need", measured);
        }
        Optional<String> warning = space.warning(layout);
        if (warning.isPresent()) {
            return CheckResult.warn(CAPACITY, warning.get(), measured);
        }
        return CheckResult.pass(CAPACITY, bytes(total) + " total, " + bytes(space.freeBytes()) + " free; bucket files need " + need
                + (space.unbackedBytes() > 0 ? " (" + bytes(space.unbackedBytes()) + " not yet backed by real space)" : ""), measured);
    }

    private CheckResult checkLayout() {
        Path file = layout.layoutFile();
        Map<String, Object> measured = new LinkedHashMap<>();
        LayoutFile.Record record = null;
        try {
            record = LayoutFile.read(file);
            measured.put("cluster_id", record.clusterId());
        } catch (NoSuchFileException e) {
            layoutRecordAbsent = true;
        } catch (LayoutMismatchException e) {
            return CheckResult.fail(LAYOUT, e.getMessage(), measured);
        } catch (IOException e) {
            return CheckResult.fail(LAYOUT, "cannot read " + file + ": " + reason(e), measured);
        }
        List<String> problems = new ArrayList<>();
        if (record != null) {
            try {
                LayoutFile.check(record, layout, file);
            } catch (LayoutMismatchException e) {
                problems.add(e.getMessage());
            }
        }
        boolean fsTypeDiffers = false;
        if (expected.isPresent()) {
            ExpectedLayout master = expected.get();
            measured.put("master_cluster_id", master.clusterId());
            measured.put("master_root_dir", master.rootDir());
            if (record != null && !record.clusterId().equals(master.clusterId())) {
                problems.add("this node mounted another cluster: cluster_id is " + record.clusterId() + " in " + file + " but "
                        + master.clusterId() + " at the master");
            }
            if (!layout.root().toString().equals(master.rootDir())) {
                problems.add("root_dir is " + layout.root() + " here but " + master.rootDir()
                        + " at the master (every node mounts the root at the same path)");
            }
            List<String> differences = new ArrayList<>();
            if (master.bucketCount() != layout.bucketCount()) {
                differences.add("bucket_count is " + layout.bucketCount() + " here but " + master.bucketCount() + " at the master");
            }
            if (master.pageSize() != layout.pageSize()) {
                differences.add("page_size is " + layout.pageSize() + " here but " + master.pageSize() + " at the master");
            }
            if (master.bucketSize() != layout.bucketSize()) {
                differences.add("bucket_size is " + layout.bucketSize() + " here but " + master.bucketSize() + " at the master");
            }
            if (!differences.isEmpty()) {
                problems.add("settings disagree with the master: " + String.join("; ", differences));
            }
            fsTypeDiffers = !master.fsType().isEmpty() && !master.fsType().equals(fsType);
        }
        if (!problems.isEmpty()) {
            return CheckResult.fail(LAYOUT, String.join("; ", problems), measured);
        }
        String against = expected.isPresent() ? " and the master" : "";
        if (record == null) {
            return CheckResult.warn(LAYOUT, "no " + file + " yet: the first master start writes it"
                    + (expected.isPresent() ? "; settings match the master" : ""), measured);
        }
        if (fsTypeDiffers) {
            return CheckResult.warn(LAYOUT, "fs_type is " + fsType + " here but " + expected.get().fsType() + " at the master", measured);
        }
        return CheckResult.pass(LAYOUT, "matches the settings" + against + " (cluster " + record.clusterId() + ")", measured);
    }

    private CheckResult checkBucketFiles() throws IOException {
        List<String> missing = new ArrayList<>();
        List<String> shortFiles = new ArrayList<>();
        List<String> denied = new ArrayList<>();
        int missingCount = 0;
        int shortCount = 0;
        int deniedCount = 0;
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            Path path = layout.bucketPath(bucket);
            String name = BucketLayout.bucketFileName(bucket);
            long size;
            try {
                size = Files.size(path);
            } catch (NoSuchFileException e) {
                if (missingCount++ < LISTED) {
                    missing.add(name);
                }
                continue;
            }
            if (size < layout.bucketSize()) {
                if (shortCount++ < LISTED) {
                    shortFiles.add(name + " is " + size + " bytes");
                }
            }
            if (!Files.isReadable(path) || !Files.isWritable(path)) {
                if (deniedCount++ < LISTED) {
                    denied.add(name);
                }
            }
        }
        Map<String, Object> measured = new LinkedHashMap<>();
        measured.put("expected", layout.bucketCount());
        measured.put("missing", missingCount);
        measured.put("short", shortCount);
        measured.put("not_accessible", deniedCount);
        if (missingCount == layout.bucketCount() && layoutRecordAbsent) {
            return CheckResult.warn(BUCKET_FILES, "root not laid out yet (no bucket files, no layout record): the first master start "
                    + "creates them", measured);
        }
        List<String> problems = new ArrayList<>();
        if (missingCount > 0) {
            problems.add(missingCount + " of " + layout.bucketCount() + " missing: " + listed(missing, missingCount));
        }
        if (shortCount > 0) {
            problems.add(shortCount + " shorter than bucket_size " + layout.bucketSize() + ": " + listed(shortFiles, shortCount));
        }
        if (deniedCount > 0) {
            problems.add(deniedCount + " not readable and writable by this user: " + listed(denied, deniedCount));
        }
        if (!problems.isEmpty()) {
            return CheckResult.fail(BUCKET_FILES, "bucket files: " + String.join("; ", problems), measured);
        }
        return CheckResult.pass(BUCKET_FILES, "all " + layout.bucketCount() + " present, at least " + bytes(layout.bucketSize())
                + ", readable and writable", measured);
    }

    private CheckResult checkOpenFiles() {
        List<String> lines;
        try {
            lines = Files.readAllLines(limitsFile);
        } catch (IOException e) {
            return CheckResult.skip(OPEN_FILES, "cannot read " + limitsFile + ": " + reason(e));
        }
        OptionalLong soft = openFilesSoftLimit(lines);
        if (soft.isEmpty()) {
            return CheckResult.skip(OPEN_FILES, "no \"Max open files\" line in " + limitsFile);
        }
        long needed = (long) layout.bucketCount() + FD_HEADROOM;
        Map<String, Object> measured = new LinkedHashMap<>();
        measured.put("soft_limit", soft.getAsLong() == Long.MAX_VALUE ? "unlimited" : soft.getAsLong());
        measured.put("needed", needed);
        String limit = soft.getAsLong() == Long.MAX_VALUE ? "unlimited" : Long.toString(soft.getAsLong());
        if (soft.getAsLong() >= needed) {
            return CheckResult.pass(OPEN_FILES, "soft limit " + limit + " >= " + needed + " (bucket files + " + FD_HEADROOM + ")", measured);
        }
        return CheckResult.warn(OPEN_FILES, "soft limit " + limit + " < " + needed + " (bucket files + " + FD_HEADROOM
                + "): raise it with ulimit -n or LimitNOFILE=", measured);
    }

    /** The soft limit of the {@code Max open files} line of {@code /proc/<pid>/limits}; {@link Long#MAX_VALUE} for unlimited. */
    public static OptionalLong openFilesSoftLimit(List<String> lines) {
        for (String line : lines) {
            if (line.startsWith("Max open files")) {
                String[] fields = line.substring("Max open files".length()).trim().split("\\s+");
                if (fields.length == 0 || fields[0].isEmpty()) {
                    return OptionalLong.empty();
                }
                if (fields[0].equals("unlimited")) {
                    return OptionalLong.of(Long.MAX_VALUE);
                }
                try {
                    return OptionalLong.of(Long.parseLong(fields[0]));
                } catch (NumberFormatException e) {
                    return OptionalLong.empty();
                }
            }
        }
        return OptionalLong.empty();
    }

    private CheckResult checkWriteProbe() throws IOException {
        long free = Files.getFileStore(layout.root()).getUsableSpace();
        // Leave most of a nearly full filesystem alone: at most a quarter of the free space, whole 4 KiB blocks.
        int size = (int) Math.min(PROBE_BYTES, (free / 4) & ~4095L);
        if (size <= 0) {
            return CheckResult.fail(WRITE_PROBE, "no free space for a probe (" + free + " bytes free)");
        }
        byte[] data = new byte[size];
        ThreadLocalRandom.current().nextBytes(data);
        int written = BucketFileIo.crc32c(ByteBuffer.wrap(data));
        Path probe = layout.root().resolve(PROBE_PREFIX + ProcessHandle.current().pid() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        boolean created = false;
        try {
            long start = System.nanoTime();
            try (FileChannel channel = FileChannel.open(probe, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                created = true;
                ByteBuffer src = ByteBuffer.wrap(data);
                while (src.hasRemaining()) {
                    channel.write(src, src.position());
                }
                channel.force(true);
            }
            long writeNanos = System.nanoTime() - start;
            ByteBuffer back = ByteBuffer.allocate(size);
            start = System.nanoTime();
            try (FileChannel channel = FileChannel.open(probe, StandardOpenOption.READ)) {
                while (back.hasRemaining()) {
                    if (channel.read(back, back.position()) < 0) {
                        break;
                    }
                }
            }
            long readNanos = System.nanoTime() - start;
            back.flip();
            int read = BucketFileIo.crc32c(back);
            Map<String, Object> measured = new LinkedHashMap<>();
            measured.put("bytes", size);
            measured.put("write_ms", round(writeNanos / 1e6));
            measured.put("read_ms", round(readNanos / 1e6));
            measured.put("write_mb_s", round(size / 1e6 / (writeNanos / 1e9)));
            measured.put("read_mb_s", round(size / 1e6 / (readNanos / 1e9)));
            measured.put("crc32c_written", String.format("%08x", written));
            measured.put("crc32c_read", String.format("%08x", read));
            if (back.remaining() != size || read != written) {
                return CheckResult.fail(WRITE_PROBE, "read back " + back.remaining() + " of " + size + " bytes with CRC32C "
                        + String.format("%08x", read) + ", wrote " + String.format("%08x", written), measured);
            }
            return CheckResult.pass(WRITE_PROBE, String.format(Locale.ROOT,
                    "%s written + fsync in %.1f ms (%.0f MB/s), read back in %.1f ms (%.0f MB/s), CRC32C matches",
                    bytes(size), writeNanos / 1e6, size / 1e6 / (writeNanos / 1e9), readNanos / 1e6, size / 1e6 / (readNanos / 1e9)), measured);
        } catch (AccessDeniedException e) {
            return CheckResult.fail(WRITE_PROBE, "cannot write in " + layout.root() + ": permission denied");
        } catch (IOException e) {
            return CheckResult.fail(WRITE_PROBE, "IO error on probe file " + probe.getFileName() + ": " + reason(e));
        } finally {
            // A probe that cannot be removed fails the check through the exception: it must not be left behind unnoticed.
            if (created) {
                Files.deleteIfExists(probe);
            }
        }
    }

    private static String listed(List<String> names, int count) {
        return String.join(", ", names) + (count > names.size() ? " and " + (count - names.size()) + " more" : "");
    }

    private static String reason(Throwable e) {
        if (e instanceof NoSuchFileException missing) {
            return "no such file " + missing.getFile();
        }
        if (e instanceof AccessDeniedException denied) {
            return "permission denied on " + denied.getFile();
        }
        String message = e.getMessage();
        return message == null || message.isBlank() ? e.getClass().getSimpleName() : message.lines().findFirst().orElse(message);
    }

    static String describe(Duration duration) {
        long millis = duration.toMillis();
        return millis % 1000 == 0 ? millis / 1000 + "s" : millis + "ms";
    }

    /** Bytes for people: 1.5 GiB, 512 KiB, 100 B. */
    static String bytes(long n) {
        return SpaceBacking.bytes(n);
    }

    private static double round(double value) {
        return Double.isFinite(value) ? Math.round(value * 100) / 100.0 : 0;
    }

    private static long saturatedProduct(long a, long b) {
        return SpaceBacking.saturatedProduct(a, b);
    }

    private static long saturatedSum(long a, long b) {
        return SpaceBacking.saturatedSum(a, b);
    }
}
