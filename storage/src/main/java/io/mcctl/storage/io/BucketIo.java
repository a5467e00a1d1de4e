package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * How bytes of bucket files move: vector writes and reads at an offset, a batch of them submitted together, and
 * sync. {@link PosixBucketIo} moves them with positional reads and writes through the kernel, {@link
 * UsrbioBucketIo} through 3FS's USRBIO rings; {@link BucketIoSelector} picks one from the {@code io} setting.
 * Everything about objects (range checks against the bucket size, CRC32C, fencing, what a short read means)
 * lives above this interface, once for both ({@link BucketFileIo}).
 *
 * <p>Each implementation keeps one open handle per bucket file in an {@link OpenFiles}, whose identity rules (a file
 * replaced or deleted under an open handle) are the same for both: {@link #open}, {@link #verify} and {@link
 * #replaceIfStale} are its.
 *
 * <p>Files are never created: a missing bucket file is a {@link BucketFileMissingException}. Implementations are
 * thread-safe; a batch belongs to one thread while it runs.
 */
public interface BucketIo extends AutoCloseable {

    /** {@code posix} or {@code usrbio}. */
    String name();

    /**
     * Writes the remaining bytes of {@code srcs}, one after another, at {@code offset}. The buffers' positions are
     * left unchanged.
     */
    void write(Path file, long offset, ByteBuffer... srcs) throws IOException;

    /**
     * Fills the remaining space of {@code dsts}, one after another, from {@code offset}, and advances their
     * positions past the bytes read.
     *
     * @return the bytes read: fewer than asked only where the file ends (0 at or past its end)
     */
    long read(Path file, long offset, ByteBuffer... dsts) throws IOException;

    /**
     * Runs every operation of {@code batch} and records each one's outcome in it: submitted together and waited for
     * once where the implementation can (USRBIO: as many as its rings and shared memory hold at a time). One
     * operation's failure does not stop the others.
     *
     * @throws IOException only when the batch as a whole could not run (then no outcome is recorded)
     */
    void execute(IoBatch batch) throws IOException;

    /** Makes the bytes written to {@code file} and its length durable (fsync). */
    void sync(Path file) throws IOException;

    /** The bucket files this IO has open, with their identity rules. */
    OpenFiles<?> files();

    /** The open file writes to {@code file} go through now, opened if needed: a writer remembers it before it writes. */
    default OpenFiles.OpenFile<?> open(Path file) throws IOException {
        return files().open(file);
    }

    /** {@link OpenFiles#verify}: whether bytes written through {@code written} are in the bucket file at the path. */
    default OpenFiles.OpenFile<?> verify(Path file, OpenFiles.OpenFile<?> written) throws IOException {
        return files().verify(file, written);
    }

    /** {@link OpenFiles#replaceIfStale}: after a failed read, takes the file now at the path when it was replaced. */
    default boolean replaceIfStale(Path file) throws IOException {
        return files().replaceIfStale(file);
    }

    /** {@link OpenFiles#replacements}: open handles replaced by the file at their path so far. */
    default long replacements() {
        return files().replacements();
    }

    /** Bucket files open now. */
    default int openFileCount() {
        return files().openCount();
    }

    /** Releases files and rings; call it once no thread is in an operation. */
    @Override
    void close() throws IOException;
}
