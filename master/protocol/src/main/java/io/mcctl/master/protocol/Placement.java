package io.mcctl.master.protocol;

/**
 * Where an object's bytes are: a run of pages in one bucket. {@code crc32c} is 0 for an allocation
 * that has not been committed yet.
 */
public record Placement(int bucket, long offset, long size, int crc32c) {

    public Placement withCrc(int crc) {
        return new Placement(bucket, offset, size, crc);
    }

    /** Same bucket, offset and size; the checksum is not part of where. */
    public boolean sameRange(Placement other) {
        return other != null && bucket == other.bucket && offset == other.offset && size == other.size;
    }
}
