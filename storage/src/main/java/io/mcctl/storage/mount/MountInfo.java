package io.mcctl.storage.mount;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Lines of {@code /proc/self/mountinfo} (proc(5)): {@code 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
 * /dev/root rw}. Field 5 is the mount point; after the optional fields and the lone {@code -} come the
 * filesystem type and the source. Spaces, tabs, newlines and backslashes in paths are octal escapes
 * ({@code \040}).
 */
public final class MountInfo {

    public static final String DEFAULT_FILE = "/proc/self/mountinfo";

    /** One mount: where, what type ({@code fuse.hf3fs} for 3FS), and from what. */
    public record Mount(String mountPoint, String fsType, String source) {
    }

    private MountInfo() {
    }

    /** The mounts in {@code lines}, in file order; lines that do not have the mountinfo shape are left out. */
    public static List<Mount> parse(List<String> lines) {
        List<Mount> mounts = new ArrayList<>();
        for (String line : lines) {
            parseLine(line).ifPresent(mounts::add);
        }
        return mounts;
    }

    public static Optional<Mount> parseLine(String line) {
        String[] fields = line.trim().split(" ");
        int separator = -1;
        for (int i = 6; i < fields.length; i++) {
            if (fields[i].equals("-")) {
                separator = i;
                break;
            }
        }
        if (separator < 0 || separator + 1 >= fields.length || !fields[4].startsWith("/")) {
            return Optional.empty();
        }
        String source = separator + 2 < fields.length ? unescape(fields[separator + 2]) : "";
        return Optional.of(new Mount(unescape(fields[4]), unescape(fields[separator + 1]), source));
    }

    /**
     * The mount that holds {@code realPath}: the longest mount point that is a prefix of it (whole path
     * components); of equal ones the last listed, since a later mount hides an earlier one at the same place.
     */
    public static Optional<Mount> mountOf(List<Mount> mounts, Path realPath) {
        Mount best = null;
        int bestDepth = -1;
        for (Mount mount : mounts) {
            Path point;
            try {
                point = Path.of(mount.mountPoint());
            } catch (InvalidPathException e) {
                continue;
            }
            if (realPath.startsWith(point) && point.getNameCount() >= bestDepth) {
                best = mount;
                bestDepth = point.getNameCount();
            }
        }
        return Optional.ofNullable(best);
    }

    /** Decodes the kernel's octal escapes: {@code \040} space, {@code \011} tab, {@code \012} newline, {@code \134} backslash. */
    static String unescape(String field) {
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '7') {
                return false;
            }
        }
        return true;
    }
}
