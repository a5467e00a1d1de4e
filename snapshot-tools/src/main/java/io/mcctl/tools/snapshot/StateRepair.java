package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.UnreadableStateException;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.storage.io.DurableFiles;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * The way out of a state directory a master refuses to start from: which damaged files to set aside and where
 * to cut the log so that what is left recovers, and doing it. Nothing is ever deleted: damaged snapshots and log
 * segments are moved into {@code damaged-<time>/} in the state directory, and a segment that is cut is first
 * copied there whole.
 *
 * <p>Never acts on state that is whole but not this mcctl's to read (another cluster's, a newer format): that is
 * {@link Plan#refusal}, for which the way out is the right mcctl or the right root, not discarding.
 */
public final class StateRepair {

    /** A file to set aside and why. */
    public record Damaged(Path file, String why) {
    }

    /**
     * What would be done. {@code cutFile} null: the log needs no cut. {@code keptUpTo}: the last record that stays.
     * {@code refusal}: non-null when the state cannot be repaired by discarding (nothing else is then planned).
     */
    public record Plan(List<Damaged> snapshots, Path cutFile, long cutOffset, String cutWhy, List<Damaged> segments, long keptUpTo,
                       String refusal) {
        public boolean nothingToDo() {
            return refusal == null && snapshots.isEmpty() && cutFile == null && segments.isEmpty();
        }

        /** One line per loss, for people. */
        public List<String> losses() {
            List<String> lines = new ArrayList<>();
            for (Damaged s : snapshots) {
                lines.add("snapshot " + s.file().getFileName() + " set aside: " + s.why());
            }
            if (cutFile != null) {
                lines.add("log cut at " + cutFile.getFileName() + " byte " + cutOffset + " (" + cutWhy + "): every record after "
                        + keptUpTo + " in it is lost");
            }
            for (Damaged s : segments) {
                lines.add("log segment " + s.file().getFileName() + " set aside whole: " + s.why());
            }
            return lines;
        }
    }

    private StateRepair() {
    }

    /** Works out the plan; reads only. */
    public static Plan plan(Path stateDir) throws IOException {
        List<Damaged> snapshots = new ArrayList<>();
        long base = 0;
        for (SnapshotFile.Listed listed : SnapshotFile.list(stateDir)) {
            try {
                SnapshotFile.open(listed.path()).verify();
                base = listed.walSequence();
                break; // the newest whole snapshot: older ones are the master's to prune
            } catch (CorruptStateException e) {
                snapshots.add(new Damaged(listed.path(), "corrupt (" + Problem.what(e) + ")"));
            }
        }
        List<WalSegments.Segment> all = WalSegments.list(stateDir);
        List<WalSegments.Segment> needed = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            if (i + 1 == all.size() || all.get(i + 1).firstSequence() - 1 > base) {
                needed.add(all.get(i));
            }
        }
        List<Damaged> segments = new ArrayList<>();
        if (!needed.isEmpty() && needed.get(0).firstSequence() > base + 1) {
            // The records between the state kept and the log are gone: nothing after the gap can be replayed.
            for (WalSegments.Segment segment : needed) {
                segments.add(new Damaged(segment.path(), "records " + (base + 1) + " to " + (needed.get(0).firstSequence() - 1)
                        + " before it are gone, so its records (from " + segment.firstSequence() + ") cannot be replayed"));
            }
            return new Plan(snapshots, null, -1, null, segments, base, null);
        }
        long[] last = {base};
        try {
            WalReader.Outcome outcome = WalReader.read(stateDir, base, false, (record, file, offset) -> last[0] = record.getSequence());
            if (outcome.torn()) {
                return new Plan(snapshots, outcome.tornFile(), outcome.tornOffset(), "a torn record, as a crash leaves", segments, last[0], null);
            }
            return new Plan(snapshots, null, -1, null, segments, last[0], null);
        } catch (UnreadableStateException e) {
            return new Plan(List.of(), null, -1, null, List.of(), last[0], e.getMessage());
        } catch (CorruptStateException e) {
            boolean after = false;
            for (WalSegments.Segment segment : all) {
                if (after) {
                    segments.add(new Damaged(segment.path(), "follows the cut (records from " + segment.firstSequence() + ")"));
                }
                after |= segment.path().equals(e.file());
            }
            return new Plan(snapshots, e.file(), e.offset(), Problem.what(e), segments, last[0], null);
        }
    }

    /**
     * Carries out {@code plan}: returns the folder the damaged files went to, or null when nothing was moved. The
     * caller holds the state directory's lock.
     */
    public static Path apply(Path stateDir, Plan plan, Instant now) throws IOException {
        if (plan.refusal() != null) {
            throw new IllegalStateException("refused: " + plan.refusal());
        }
        if (plan.nothingToDo()) {
            return null;
        }
        Path aside = stateDir.resolve("damaged-" + DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC).format(now));
        Files.createDirectories(aside);
        for (Damaged snapshot : plan.snapshots()) {
            Files.move(snapshot.file(), aside.resolve(snapshot.file().getFileName()));
        }
        if (plan.cutFile() != null) {
            Files.copy(plan.cutFile(), aside.resolve(plan.cutFile().getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
            DurableFiles.fsyncDirectory(aside);
            try (FileChannel channel = FileChannel.open(plan.cutFile(), StandardOpenOption.WRITE)) {
                channel.truncate(plan.cutOffset());
                channel.force(true);
            }
        }
        for (Damaged segment : plan.segments()) {
            Files.move(segment.file(), aside.resolve(segment.file().getFileName()));
        }
        DurableFiles.fsyncDirectory(aside);
        DurableFiles.fsyncDirectory(stateDir);
        return aside;
    }
}
