package io.mcctl.cli;

import io.mcctl.storage.layout.SpaceBacking;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Transparent huge pages for the master's heap. The master's tables are millions of records reached at random: on
 * 4 KiB pages almost every lookup and commit misses the TLB as well as the caches, and on a virtual machine each TLB
 * miss is a walk of two page tables. With the heap on 2 MiB pages its offload cycles at batch 64 took about a fifth
 * less CPU per key (docs/benchmarks.md, "bench master"). Where the kernel gives them only to
 * memory that asks (its mode {@code madvise}, the common default), the JVM asks with {@value #JVM_OPTION}: the
 * {@code mcctl} launcher passes it to {@code mcctl master}, and {@link io.mcctl.cli.bench.MasterProcess} to the masters
 * benchmarks and tests start, so that they measure what operators run. {@code -XX:-UseTransparentHugePages} in
 * {@code MCCTL_JAVA_OPTS} (which comes after it) turns them off.
 */
public final class HeapPages {

    /** The JVM option that puts the heap on transparent huge pages. */
    public static final String JVM_OPTION = "-XX:+UseTransparentHugePages";

    /** The kernel's setting; the mode in force is the word in brackets, e.g. {@code always [madvise] never}. */
    static final Path KERNEL_SETTING = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");

    private static final Pattern MODE = Pattern.compile("\\[(\\w+)]");

    private HeapPages() {
    }

    /** The kernel's mode for transparent huge pages ({@code always}, {@code madvise}, {@code never}), or null when unknown. */
    public static String kernelMode() {
        try {
            Matcher m = MODE.matcher(Files.readString(KERNEL_SETTING));
            return m.find() ? m.group(1) : null;
        } catch (IOException | RuntimeException e) {
            return null; // no such file: a kernel without them, or not Linux
        }
    }

    /** The JVM options a master starts with unless told otherwise: {@value #JVM_OPTION} where the kernel offers them. */
    public static List<String> masterDefaults() {
        String mode = kernelMode();
        return "always".equals(mode) || "madvise".equals(mode) ? List.of(JVM_OPTION) : List.of();
    }

    /** Whether this JVM's heap is on transparent huge pages under the kernel's {@code mode}: granted on asking, or given to all memory. */
    private static boolean inUse(String mode) {
        if ("always".equals(mode)) {
            return true;
        }
        try {
            return Boolean.parseBoolean(ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class)
                    .getVMOption("UseTransparentHugePages").getValue()); // the JVM clears it when the kernel refuses
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** One line for the master's start-up log: its heap's limit and whether it is on huge pages, and why not. */
    public static String describe() {
        String mode = kernelMode();
        String pages;
        if (inUse(mode)) {
            pages = "on (kernel: " + mode + ")";
        } else if (mode == null) {
            pages = "off (this kernel has none)";
        } else if ("never".equals(mode)) {
            pages = "off (kernel: never)";
        } else {
            pages = "off (kernel: " + mode + "; " + JVM_OPTION + " asks for them)";
        }
        return "heap: up to " + SpaceBacking.bytes(Runtime.getRuntime().maxMemory()) + ", transparent huge pages " + pages;
    }
}
