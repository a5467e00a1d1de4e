package io.mcctl.master.server;

import com.google.protobuf.ByteString;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.PageService;

/**
 * Placements as the wire's descriptors, and descriptors back as placements. Immutable after construction: thread-safe.
 */
final class DescriptorCodec {

    private final PageService pages;
    /** Each bucket's path, UTF-8 encoded once: every descriptor carries one. */
    private final ByteString[] bucketPathBytes;

    DescriptorCodec(PageService pages) {
        this.pages = pages;
        this.bucketPathBytes = new ByteString[pages.layout().bucketCount()];
        for (int b = 0; b < bucketPathBytes.length; b++) {
            bucketPathBytes[b] = ByteString.copyFromUtf8(pages.bucketPath(b));
        }
    }

    DistributedDiskDescriptor toWire(Placement placement) {
        return DistributedDiskDescriptor.newBuilder()
                .setFilePathBytes(bucketPathBytes[placement.bucket()])
                .setBucket(placement.bucket())
                .setOffset(placement.offset())
                .setObjectSize(placement.size())
                .setCrc32C(placement.crc32c())
                .build();
    }

    /**
     * The placement a descriptor names. With the bucket index no path is decoded or parsed; a path sent beside it must
     * be that bucket's, byte for byte. A bucket index outside the layout stays as it was sent (an error message echoes
     * it) and matches no allocation; a path that names no bucket file, or another bucket than the index, is -1, which
     * matches none either.
     */
    Placement fromWire(DistributedDiskDescriptor descriptor) {
        return new Placement(bucketOf(descriptor), descriptor.getOffset(), descriptor.getObjectSize(), descriptor.getCrc32C());
    }

    private int bucketOf(DistributedDiskDescriptor descriptor) {
        if (!descriptor.hasBucket()) {
            return pages.bucketOfPath(descriptor.getFilePath());
        }
        int bucket = descriptor.getBucket();
        if (bucket < 0 || bucket >= bucketPathBytes.length) {
            return bucket;
        }
        ByteString path = descriptor.getFilePathBytes();
        if (path.isEmpty() || path.equals(bucketPathBytes[bucket])) {
            return bucket;
        }
        return pages.bucketOfPath(descriptor.getFilePath()) == bucket ? bucket : -1; // the same file spelled another way
    }
}
