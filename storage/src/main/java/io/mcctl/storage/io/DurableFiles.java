package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/** Small files written so that a crash leaves either the old content or the new, never a mix. */
public final class DurableFiles {

    private DurableFiles() {
    }

    /** Writes {@code content} to a temp file beside {@code target}, fsyncs it, renames it over, fsyncs the directory. */
    public static void writeAtomically(Path target, byte[] content) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        Path temp = writeSyncedTemp(target, content);
        try {
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        fsyncDirectory(dir);
    }

    /**
     * Creates {@code target} with {@code content} unless it exists, atomically: the content is written and
     * fsynced under a temp name, then hard-linked to the target name, which fails if another process got
     * there first. Readers never see a partial file.
     *
     * @return true when this call created the file, false when it already existed
     */
    public static boolean createAtomically(Path target, byte[] content) throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        Path temp = writeSyncedTemp(target, content);
        try {
            Files.createLink(target, temp);
            fsyncDirectory(dir);
            return true;
        } catch (java.nio.file.FileAlreadyExistsException e) {
            return false;
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    /** Writes {@code content} to a temp file beside {@code target} and fsyncs it; returns the temp file. */
    private static Path writeSyncedTemp(Path target, byte[] content) throws IOException {
        Path temp = target.toAbsolutePath().getParent()
                .resolve(target.getFileName() + ".tmp-" + ProcessHandle.current().pid() + "-" + Thread.currentThread().getId());
        try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        return temp;
    }

    /** Makes a rename or create inside {@code dir} durable. Filesystems that refuse to open a directory are skipped. */
    public static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            // Some filesystems (and FUSE mounts) do not support fsync on a directory; the rename stands.
            if (!Files.isDirectory(dir)) {
                throw e;
            }
        }
    }
}
