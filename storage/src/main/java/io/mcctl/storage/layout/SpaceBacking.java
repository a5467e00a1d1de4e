package io.mcctl.storage.layout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * How much real space backs a root's bucket files. They are sparse: laying out 256 x 4 GiB takes no blocks, and a
 * write into a hole fails with ENOSPC once the filesystem is full, long after the layout looked fine. The JVM cannot
 * see a file's allocated blocks, so they are read with {@code stat -c %b:%B} (coreutils); where that fails, the
 * files' sizes stand in for them and the figure is an upper bound ({@link #allocatedKnown} false).
 *
 * <p>{@link #preallocate} reserves the space with {@code fallocate -l} (util-linux), which allocates blocks without
 * changing a byte or the size of a file: bucket files only grow.
 */
public record SpaceBacking(long capacityBytes, long allocatedBytes, long freeBytes, boolean allocatedKnown) {

    /** Measures the bucket files of {@code layout} (missing ones hold nothing) and the free space under its root. */
    public static SpaceBacking measure(BucketLayout layout) throws IOException {
        long capacity = saturatedProduct(layout.bucketCount(), layout.bucketSize());
        long free = Files.getFileStore(existingAncestor(layout.root())).getUsableSpace();
        List<String> files = new ArrayList<>();
        long sizes = 0;
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            Path path = layout.bucketPath(bucket);
            if (Files.exists(path)) {
                files.add(path.toString());
                sizes = saturatedSum(sizes, Files.size(path));
            }
        }
        if (files.isEmpty()) {
            return new SpaceBacking(capacity, 0, free, true);
        }
        Optional<Long> blocks = allocatedBlocks(files);
        return new SpaceBacking(capacity, blocks.orElse(sizes), free, blocks.isPresent());
    }

    /** Bytes of the layout that no block backs yet. */
    public long unbackedBytes() {
        return Math.max(0, capacityBytes - allocatedBytes);
    }

    /** A warning when the free space cannot back the whole layout, saying what was laid out and what backs it. */
    public Optional<String> warning(BucketLayout layout) {
        if (freeBytes >= unbackedBytes()) {
            return Optional.empty();
        }
        return Optional.of("the root " + layout.root() + " lays out " + layout.bucketCount() + " x " + bytes(layout.bucketSize()) + " = "
                + bytes(capacityBytes) + " of bucket files but the filesystem has " + bytes(freeBytes) + " free: the files are sparse ("
                + (allocatedKnown ? "" : "at most ") + bytes(allocatedBytes) + " of them backed by real space so far) and take space only as "
                + "objects are written, so writes fail with 'no space left on device' after about " + bytes(freeBytes) + " more and "
                + bytes(unbackedBytes() - freeBytes) + " of the layout cannot be written when the tier fills; fine for a trial, otherwise "
                + "free space, lay out a new root with fewer or smaller buckets (--bucket-count, --bucket-size), or reserve the space at "
                + "start with --preallocate true");
    }

    /** Reserves real space for every bucket file of {@code layout} (which must be laid out); returns the seconds it took. */
    public static double preallocate(BucketLayout layout) throws IOException {
        long began = System.nanoTime();
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            Path path = layout.bucketPath(bucket);
            Process process = new ProcessBuilder("fallocate", "-l", Long.toString(layout.bucketSize()), path.toString())
                    .redirectErrorStream(true).start();
            String output;
            try {
                output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                if (!process.waitFor(10, TimeUnit.MINUTES)) {
                    process.destroyForcibly();
                    throw new IOException("fallocate of " + path + " did not finish in 10 minutes");
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while reserving space for " + path);
            }
            if (process.exitValue() != 0) {
                throw new IOException("cannot reserve " + bytes(layout.bucketSize()) + " for " + path + " with fallocate: "
                        + (output.isEmpty() ? "exit " + process.exitValue() : output) + " (the filesystem may not support it; start without "
                        + "preallocate_buckets)");
            }
        }
        return (System.nanoTime() - began) / 1e9;
    }

    private static Optional<Long> allocatedBlocks(List<String> files) {
        List<String> command = new ArrayList<>(List.of("stat", "-c", "%b:%B"));
        command.addAll(files);
        try {
            Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
                process.destroyForcibly();
                return Optional.empty();
            }
            long total = 0;
            for (String line : output.strip().split("\n")) {
                String[] parts = line.strip().split(":");
                total = saturatedSum(total, saturatedProduct(Long.parseLong(parts[0]), Long.parseLong(parts[1])));
            }
            return Optional.of(total);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private static Path existingAncestor(Path path) {
        Path at = path.toAbsolutePath();
        while (at != null && !Files.exists(at)) {
            at = at.getParent();
        }
        return at == null ? Path.of("/") : at;
    }

    /** Bytes for people: 1.5 GiB, 512 KiB, 100 B. */
    public static String bytes(long n) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double value = n;
        int unit = 0;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return unit == 0 ? n + " B" : (value == Math.rint(value) ? String.format(Locale.ROOT, "%.0f %s", value, units[unit])
                : String.format(Locale.ROOT, "%.1f %s", value, units[unit]));
    }

    /** {@code a * b}, or Long.MAX_VALUE where it would overflow. */
    public static long saturatedProduct(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** {@code a + b} of two non-negative numbers, or Long.MAX_VALUE where it would overflow. */
    public static long saturatedSum(long a, long b) {
        long sum = a + b;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }
}
