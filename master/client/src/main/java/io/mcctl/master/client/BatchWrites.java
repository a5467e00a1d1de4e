package io.mcctl.master.client;

import io.mcctl.master.client.TierWriter.ObjectSource;
import io.mcctl.master.client.TierWriter.Outcome;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse;
import io.mcctl.storage.io.BucketFileIo;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The writes of one offload through the node's bucket IO (POSIX or USRBIO): objects written chunk by chunk, the chunks
 * of several objects gathered into one submission of at most {@link #chunkBytes} (submitted together and waited for
 * once), the fence checked before each submission and the batch's allocations renewed when half the deadline is gone:
 * a writer fenced past its deadline submits nothing more. Each object's CRC32C is taken over its bytes as they are
 * added. Not thread-safe: one offload's.
 */
final class BatchWrites {
    private final TierNode node;
    private final TierWriter.Listener listener;
    private final int chunkBytes;
    private final String tenant;
    private final List<String> keys;
    private final List<ObjectSource> objects;
    private final DistributedDiskDescriptor[] places;
    private final Outcome[] outcomes;
    private final List<Integer> failed;
    private final WriterFence fence;
    /** The buffer objects read from files are written through, made at the first such object and kept for the batch. */
    private ByteBuffer fileChunk;
    /** Per object, whether a chunk of it failed or was fenced; its later chunks are not written. */
    private final boolean[] dead;
    /** Per object being written, its CRC32C so far. */
    private CRC32C[] crcs;

    // The chunks added and not yet submitted, in order: each one's object, file, offset and bytes.
    private int pending;
    private long pendingBytes;
    private int[] pendingObject = new int[16];
    private Path[] pendingFile = new Path[16];
    private long[] pendingOffset = new long[16];
    private ByteBuffer[] pendingBytesOf = new ByteBuffer[16];
    private int[] objectOf = new int[16];

    /**
     * @param places   each object's place, null where it was not allocated; an object written gets its CRC32C set here
     * @param outcomes each object's outcome, null while it is still to be written; a failure sets it
     * @param failed   the objects whose pages are to be freed; a failure adds to it
     */
    BatchWrites(TierNode node, TierWriter.Listener listener, int chunkBytes, String tenant, List<String> keys, List<ObjectSource> objects,
                DistributedDiskDescriptor[] places, Outcome[] outcomes, List<Integer> failed, WriterFence fence) {
        this.node = node;
        this.listener = listener;
        this.chunkBytes = chunkBytes;
        this.tenant = tenant;
        this.keys = keys;
        this.objects = objects;
        this.places = places;
        this.outcomes = outcomes;
        this.failed = failed;
        this.fence = fence;
        this.dead = new boolean[keys.size()];
    }

    /**
     * Writes objects {@code which} at their places. Each one written has its CRC32C in its place; each that failed (or
     * was fenced) has its outcome set and is added to {@code failed}; one lost to a renewal the master refused has its
     * outcome set only.
     *
     * @return the objects written, in order
     */
    List<Integer> write(List<Integer> which) {
        crcs = new CRC32C[keys.size()];
        for (int i : which) {
            if (outcomes[i] != null) {
                continue;
            }
            dead[i] = false;
            crcs[i] = new CRC32C();
            try {
                add(i);
            } catch (IOException | RuntimeException e) {
                fail(i, e);
            }
        }
        submit();
        List<Integer> written = new ArrayList<>();
        for (int i : which) {
            if (outcomes[i] == null && !dead[i] && crcs[i] != null) {
                places[i] = places[i].toBuilder().setCrc32C((int) crcs[i].getValue()).build();
                written.add(i);
            }
        }
        return written;
    }

    /** Adds object {@code i}'s chunks, submitting whenever a submission is full (and before a file's chunk buffer is refilled). */
    private void add(int i) throws IOException {
        ObjectSource object = objects.get(i);
        Path file = Path.of(places[i].getFilePath());
        long position = places[i].getOffset();
        long size = object.size();
        long done = 0;
        if (object.file() != null) {
            ByteBuffer buffer = fileChunk();
            try (FileChannel source = FileChannel.open(object.file(), StandardOpenOption.READ)) {
                while (done < size && !dead[i] && outcomes[i] == null) {
                    submit(); // the chunk buffer is about to be filled again
                    if (dead[i] || outcomes[i] != null) {
                        break;
                    }
                    buffer.clear();
                    buffer.limit((int) Math.min(buffer.capacity(), size - done));
                    while (buffer.hasRemaining()) {
                        if (source.read(buffer, done + buffer.position()) < 0) {
                            throw new EOFException(object.file() + " ended at " + (done + buffer.position()) + " bytes while being offloaded; it had "
                                    + size + " when offload began");
                        }
                    }
                    buffer.flip();
                    int length = buffer.remaining();
                    addChunk(i, file, position, buffer, done);
                    position += length;
                    done += length;
                }
            }
            return;
        }
        for (ByteBuffer part : object.parts()) {
            ByteBuffer rest = part.duplicate();
            while (rest.hasRemaining() && !dead[i] && outcomes[i] == null) {
                ByteBuffer piece = rest.slice();
                piece.limit(Math.min(piece.remaining(), chunkBytes));
                int length = piece.remaining();
                addChunk(i, file, position, piece, done);
                position += length;
                done += length;
                rest.position(rest.position() + length);
            }
        }
    }

    private void addChunk(int i, Path file, long position, ByteBuffer piece, long done) {
        listener.beforeChunk(objects.get(i).key(), done);
        if (pendingBytes + piece.remaining() > chunkBytes) {
            submit();
            if (dead[i] || outcomes[i] != null) {
                return;
            }
        }
        node.ioFor(position, piece.remaining()); // asks for the layout again when the buckets grew past what this node knows
        if (pending == pendingObject.length) {
            int capacity = pending * 2;
            pendingObject = Arrays.copyOf(pendingObject, capacity);
            pendingFile = Arrays.copyOf(pendingFile, capacity);
            pendingOffset = Arrays.copyOf(pendingOffset, capacity);
            pendingBytesOf = Arrays.copyOf(pendingBytesOf, capacity);
            objectOf = Arrays.copyOf(objectOf, capacity);
        }
        pendingObject[pending] = i;
        pendingFile[pending] = file;
        pendingOffset[pending] = position;
        pendingBytesOf[pending] = piece;
        pending++;
        pendingBytes += piece.remaining();
    }

    /**
     * Submits the chunks added, as one batch: none of them once the fence has passed; none of an object the renewal
     * before it lost; each chunk that failed fails its object.
     */
    private void submit() {
        if (pending == 0) {
            return;
        }
        int count = pending;
        pending = 0;
        pendingBytes = 0;
        try {
            checkFence();
        } catch (AllocationExpiredException e) {
            for (int k = 0; k < count; k++) {
                int i = pendingObject[k];
                if (!dead[i] && outcomes[i] == null) {
                    dead[i] = true;
                    failed.add(i);
                    outcomes[i] = new Outcome(keys.get(i), ErrorCode.OBJECT_NOT_FOUND, e.getMessage(), places[i]);
                }
            }
            Arrays.fill(pendingBytesOf, 0, count, null);
            return;
        }
        BucketFileIo.Batch batch = node.io().batch();
        for (int k = 0; k < count; k++) {
            int i = pendingObject[k];
            if (dead[i] || outcomes[i] != null) {
                continue;
            }
            try {
                objectOf[batch.write(pendingFile[k], pendingOffset[k], pendingBytesOf[k], crcs[i])] = i;
            } catch (RuntimeException outOfRange) {
                fail(i, outOfRange);
            }
        }
        Arrays.fill(pendingBytesOf, 0, count, null);
        try {
            batch.run();
        } catch (IOException | RuntimeException e) {
            for (int op = 0; op < batch.size(); op++) {
                fail(objectOf[op], e);
            }
            return;
        }
        for (int op = 0; op < batch.size(); op++) {
            IOException failure = batch.failure(op);
            if (failure != null) {
                fail(objectOf[op], failure);
            }
        }
    }

    private void fail(int i, Exception e) {
        if (dead[i] || outcomes[i] != null) {
            return;
        }
        dead[i] = true;
        failed.add(i);
        outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, writeFailure(Path.of(places[i].getFilePath()), e), places[i]);
    }

    /** Renews when due, then refuses to go on once the fence has passed. A key the renewal lost keeps its outcome. */
    private void checkFence() throws AllocationExpiredException {
        long now = System.nanoTime();
        if (now - fence.renewAtNanos >= 0 && !fence.passed(now)) {
            renew();
            now = System.nanoTime();
        }
        if (fence.passed(now)) {
            throw new AllocationExpiredException("its allocation expired before the write finished (the writer was held up past the "
                    + "allocation deadline): nothing more was written, write it again");
        }
    }

    /**
     * Renews every allocation of the batch this writer still holds. A key the master refuses is lost to the batch
     * (its outcome is set, and nothing more is written for it); a renewal that fails as a whole leaves the fence where it was.
     */
    private void renew() {
        List<Integer> held = new ArrayList<>();
        List<String> heldKeys = new ArrayList<>();
        List<DistributedDiskDescriptor> heldPlaces = new ArrayList<>();
        for (int k = 0; k < places.length; k++) {
            if (places[k] != null && outcomes[k] == null) {
                held.add(k);
                heldKeys.add(keys.get(k));
                heldPlaces.add(places[k]);
            }
        }
        long sent = System.nanoTime();
        RenewDistributedPageAllocationResponse renewed;
        try {
            renewed = node.master().renew(heldKeys, Collections.nCopies(heldKeys.size(), tenant), heldPlaces);
        } catch (MasterException e) {
            // Not renewed: the old fence stands, and the writer stops at it. Try again when half the time left is gone.
            long now = System.nanoTime();
            fence.renewAtNanos = now + Math.max(0, (fence.fenceNanos - now) / 2);
            return;
        }
        for (int j = 0; j < held.size(); j++) {
            KeyError status = renewed.getResults(j);
            if (status.getError() != ErrorCode.OK) {
                int k = held.get(j);
                outcomes[k] = new Outcome(keys.get(k), status.getError(), "its allocation could not be renewed: " + status.getMessage()
                        + "; nothing more was written", places[k]);
            }
        }
        fence.set(sent, renewed.getDeadlineMs());
    }

    /** A write failure as one line; a full filesystem says how full, against what the layout promises. */
    String writeFailure(Path file, Exception e) {
        String message = e.getMessage() == null ? e.toString() : e.getMessage();
        if (e instanceof IOException && message.contains("No space left on device")) {
            long capacity = (long) node.layout().getBucketCount() * node.layout().getBucketSize();
            String free;
            try {
                free = Files.getFileStore(file).getUsableSpace() + " bytes free";
            } catch (IOException | RuntimeException unknown) {
                free = "free space unknown (" + unknown.getMessage() + ")";
            }
            return "write failed: the filesystem under the root " + node.layout().getRootDir() + " is full (ENOSPC): the layout needs "
                    + node.layout().getBucketCount() + " x " + node.layout().getBucketSize() + " = " + capacity + " bytes, the filesystem has "
                    + free + "; its pages were freed";
        }
        return "write failed: " + message;
    }

    private ByteBuffer fileChunk() {
        if (fileChunk == null) {
            fileChunk = ByteBuffer.allocate((int) Math.min(chunkBytes, Math.max(1, maxFileBytes(objects))));
        }
        return fileChunk;
    }

    private static long maxFileBytes(List<ObjectSource> objects) {
        long max = 0;
        for (ObjectSource object : objects) {
            if (object.file() != null) {
                max = Math.max(max, object.fileBytes());
            }
        }
        return max;
    }

    /** The writer's fence refused a pwrite: the allocation's deadline (less the margin) has passed on the writer's clock. */
    private static final class AllocationExpiredException extends Exception {
        private static final long serialVersionUID = 1L;

        AllocationExpiredException(String message) {
            super(message);
        }
    }
}
