package io.mcctl.master.durability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Names of write-ahead log segments: {@code wal-<first sequence, 20 digits>.log}, so listing the state
 * directory in name order lists the log in order. A segment holds frames of {@link FrameCodec}.
 */
public final class WalSegments {

    private static final Pattern NAME = Pattern.compile("wal-(\\d{20})\\.log");

    /** One segment file and the sequence of its first record. */
    public record Segment(Path path, long firstSequence) {
    }

    private WalSegments() {
    }

    public static String fileName(long firstSequence) {
        return String.format(Locale.ROOT, "wal-%020d.log", firstSequence);
    }

    /** The segments in {@code dir}, oldest first. */
    public static List<Segment> list(Path dir) throws IOException {
        List<Segment> segments = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return segments;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.sorted().toList()) {
                Matcher m = NAME.matcher(file.getFileName().toString());
                if (m.matches()) {
                    segments.add(new Segment(file, Long.parseLong(m.group(1))));
                }
            }
        }
        return segments;
    }
}
